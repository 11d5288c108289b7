//! A plugin that claims a different zkpipe ABI version: the loader must refuse it.

use zkpipe_core::plugin::{
    ABI_VERSION, AccelError, AcceleratorImpl, BackendConfig, BackendInfo, BackendPlugin,
    Capabilities,
};

/// A backend with no ops.
#[derive(Debug)]
pub struct OldAbi;

impl AcceleratorImpl for OldAbi {
    fn info(&self) -> BackendInfo {
        BackendInfo {
            name: "old-abi".into(),
            version: "0".into(),
            devices: Default::default(),
            notes: Default::default(),
        }
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }
}

impl BackendPlugin for OldAbi {
    const NAME: &'static str = "old-abi";
    fn create(_: &BackendConfig) -> Result<Self, AccelError> {
        Ok(OldAbi)
    }
}

zkpipe_core::export_backend!(OldAbi, abi_version = ABI_VERSION + 1);
