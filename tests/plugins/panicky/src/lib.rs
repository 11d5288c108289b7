//! A plugin whose ops panic: the host must get errors, never an abort.

use zkpipe_core::plugin::{
    AccelError, AcceleratorImpl, BackendConfig, BackendInfo, BackendPlugin, BasesRef, Capabilities,
    DeviceInfo, DeviceKind, MsmConfig, NttConfig, ext_get,
};
use zkpipe_core::{Fr, G1Affine, G1Projective};

/// Panics in `msm_g1` and `ntt`; `msm_g2` is left unsupported.
#[derive(Debug)]
pub struct Panicky;

impl AcceleratorImpl for Panicky {
    fn info(&self) -> BackendInfo {
        let dev = DeviceInfo {
            id: 0,
            name: "nothing".into(),
            kind: DeviceKind::Other,
            memory_bytes: 0,
            compute_units: 1,
        };
        BackendInfo {
            name: "panicky".into(),
            version: "0".into(),
            devices: vec![dev].into(),
            notes: Default::default(),
        }
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }
    fn msm_g1(
        &self,
        _: BasesRef<'_, G1Affine>,
        _: &[Fr],
        _: &MsmConfig,
    ) -> Result<G1Projective, AccelError> {
        panic!("deliberate panic in msm_g1")
    }
    fn ntt(&self, values: &mut [Fr], _: &NttConfig) -> Result<(), AccelError> {
        let i = values.len() + 1;
        values[i] = Fr::ZERO; // out of bounds: a panic, not UB
        Ok(())
    }
}

impl BackendPlugin for Panicky {
    const NAME: &'static str = "panicky";
    fn create(config: &BackendConfig) -> Result<Self, AccelError> {
        if ext_get(&config.ext, "panic_in_new").is_some() {
            panic!("deliberate panic in new");
        }
        Ok(Panicky)
    }
}

zkpipe_core::export_backend!(Panicky);
