//! The smallest zkpipe backend: one device, one op (`msm_g1` from host
//! bases, and batches of it through the trait's default). Every other op answers `Unsupported`, and the prover runs those
//! on the CPU reference. Walked through in docs/plugin-guide.md.

use zkpipe_core::plugin::{
    AccelError, AcceleratorImpl, BackendConfig, BackendInfo, BackendPlugin, BasesRef, Capabilities,
    DeviceInfo, DeviceKind, MsmConfig, OpSupport, ops,
};
use zkpipe_core::{Fr, G1Affine, G1Projective};

/// The backend: no state, so nothing to set up.
#[derive(Debug)]
pub struct Minimal;

impl AcceleratorImpl for Minimal {
    fn info(&self) -> BackendInfo {
        BackendInfo {
            name: Self::NAME.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            devices: vec![DeviceInfo {
                id: 0,
                name: "host".into(),
                kind: DeviceKind::Cpu,
                memory_bytes: 0,
                compute_units: 1,
            }]
            .into(),
            notes: "the plugin writer's guide's example: naive msm_g1".into(),
        }
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            // The trait's default runs a batch of MSMs one `msm_g1` after
            // another, so the batch op works too and is declared.
            ops: vec![
                OpSupport::new(ops::MSM_G1, 32),
                OpSupport::new(ops::MSM_G1_BATCH, 32),
            ]
            .into(),
        }
    }

    fn msm_g1(
        &self,
        bases: BasesRef<'_, G1Affine>,
        scalars: &[Fr],
        _config: &MsmConfig,
    ) -> Result<G1Projective, AccelError> {
        // Only host bases: resident ones are not declared, so none come.
        let BasesRef::Host(bases) = bases else {
            return Err(AccelError::unsupported(ops::RESIDENT_BASES));
        };
        // Where a real backend calls its accelerator. The guard around this
        // call has already checked that the lengths agree.
        Ok(zkpipe_core::backend::reference::msm_g1(
            bases.as_slice(),
            scalars,
        ))
    }
}

impl BackendPlugin for Minimal {
    const NAME: &'static str = "minimal";

    fn create(config: &BackendConfig) -> Result<Self, AccelError> {
        // A setting meant for another backend is a mistake worth saying.
        if let Some(kv) = config.ext.first() {
            return Err(AccelError::invalid_input(format!(
                "the minimal backend takes no settings; got `{}`",
                kv.key
            )));
        }
        Ok(Minimal)
    }
}

zkpipe_core::export_backend!(Minimal);
