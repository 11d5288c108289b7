//! What a backend library exports: its root module, and the macro that
//! makes it.

use abi_stable::{
    StableAbi, declare_root_module_statics, library::RootModule, package_version_strings,
    sabi_types::VersionStrings, std_types::RStr,
};

use super::*;

/// What every backend library exports (its abi_stable root module).
#[allow(missing_debug_implementations)]
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = BackendModRef)))]
#[sabi(missing_field(panic))]
pub struct BackendMod {
    /// The [`ABI_VERSION`] the plugin was built with.
    pub abi_version: extern "C" fn() -> u32,
    /// The backend's registry name (`cpu`, `cuda`, …).
    pub name: extern "C" fn() -> RStr<'static>,
    /// Creates a backend instance. Never panics (errors are returned).
    #[sabi(last_prefix_field)]
    pub new: extern "C" fn(config: &BackendConfig) -> AccelResult<AcceleratorBox>,
}

impl RootModule for BackendModRef {
    declare_root_module_statics! {BackendModRef}
    const BASE_NAME: &'static str = "zkpipe_backend";
    const NAME: &'static str = "zkpipe_backend";
    const VERSION_STRINGS: VersionStrings = package_version_strings!();
}

/// A backend's constructor, as the export macro needs it.
pub trait BackendPlugin: AcceleratorImpl + Sized {
    /// Registry name (`cpu`, `cuda`, `wgpu`): what `--backend` matches.
    const NAME: &'static str;
    /// Creates an instance.
    ///
    /// # Errors
    /// `INVALID_INPUT` for a bad config, `DEVICE_UNAVAILABLE` when the runtime is missing.
    fn create(config: &BackendConfig) -> Result<Self, AccelError>;
}

/// Exports a [`BackendPlugin`] as this library's root module. Use once per
/// backend `cdylib`:
///
/// ```ignore
/// zkpipe_core::export_backend!(CpuBackend);
/// ```
///
/// The hidden `abi_version = N` form exists for the loader's tests (a plugin
/// claiming another ABI version).
#[macro_export]
macro_rules! export_backend {
    ($backend:ty) => {
        $crate::export_backend!($backend, abi_version = $crate::plugin::ABI_VERSION);
    };
    ($backend:ty, abi_version = $abi:expr) => {
        #[::abi_stable::export_root_module]
        pub fn zkpipe_backend_root_module() -> $crate::plugin::BackendModRef {
            use ::abi_stable::prefix_type::PrefixTypeTrait;
            extern "C" fn abi_version() -> u32 {
                $abi
            }
            extern "C" fn name() -> ::abi_stable::std_types::RStr<'static> {
                <$backend as $crate::plugin::BackendPlugin>::NAME.into()
            }
            extern "C" fn new(
                config: &$crate::plugin::BackendConfig,
            ) -> $crate::plugin::AccelResult<$crate::plugin::AcceleratorBox> {
                $crate::plugin::guard("new", || {
                    <$backend as $crate::plugin::BackendPlugin>::create(config)
                        .map($crate::plugin::into_accelerator)
                })
            }
            $crate::plugin::BackendMod {
                abi_version,
                name,
                new,
            }
            .leak_into_prefix()
        }
    };
}
