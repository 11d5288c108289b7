//! Scheduling policies as plugins: a `cdylib` implements [`Policy`] and
//! [`PolicyPlugin`], exports it with [`export_policy!`](crate::export_policy),
//! and `zkpipe bench batch --policy path/to/libzkpipe_policy_x.so` loads it —
//! the same abi_stable mechanism as backends, with the same guarantees:
//! layout and version checked at load, panics never cross the seam.

#![allow(non_local_definitions)] // emitted by #[sabi_trait]

use abi_stable::library::{RootModule, lib_header_from_path};
use abi_stable::std_types::{RBox, RResult, RSlice, RStr, RString};
use abi_stable::{
    StableAbi, declare_root_module_statics, package_version_strings, sabi_trait,
    sabi_types::VersionStrings,
};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::Arc;

use super::policy::{Policy, Ticket};
use super::settings::Settings;
use crate::Error;

/// Version of the policy plugin ABI; the loader refuses others.
pub const POLICY_ABI_VERSION: u32 = 1;

/// The FFI-safe mirror of [`Policy`].
#[sabi_trait]
pub trait PolicyFfi: Send + Sync {
    /// Name for reports.
    fn name(&self) -> RString;
    /// The knobs, as TOML of [`Settings`]' keys.
    fn settings_toml(&self) -> RString;
    /// See [`Policy::pick`].
    fn pick(&self, queue: RSlice<'_, Ticket>) -> usize;
    /// See [`Policy::place`].
    fn place(&self, ticket: &Ticket, load: RSlice<'_, u64>) -> usize;
    /// See [`Policy::admit`].
    #[sabi(last_prefix_field)]
    fn admit(&self, need: u64, in_use: u64, budget: u64) -> bool;
}

/// An owned policy trait object from a plugin.
pub type PolicyBox = PolicyFfi_TO<'static, RBox<()>>;

/// What every policy library exports.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = PolicyModRef)))]
#[sabi(missing_field(panic))]
#[allow(missing_debug_implementations)]
pub struct PolicyMod {
    /// The [`POLICY_ABI_VERSION`] the plugin was built with.
    pub abi_version: extern "C" fn() -> u32,
    /// Creates the policy from the host's knobs (TOML); never panics.
    #[sabi(last_prefix_field)]
    pub new: extern "C" fn(settings_toml: RStr<'_>) -> RResult<PolicyBox, RString>,
}

impl RootModule for PolicyModRef {
    declare_root_module_statics! {PolicyModRef}
    const BASE_NAME: &'static str = "zkpipe_policy";
    const NAME: &'static str = "zkpipe_policy";
    const VERSION_STRINGS: VersionStrings = package_version_strings!();
}

/// A policy's constructor, as the export macro needs it.
pub trait PolicyPlugin: Policy + Sized + 'static {
    /// Builds the policy on top of the host's knobs (it may change them).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for knobs it cannot work with.
    fn create(settings: Settings) -> Result<Self, Error>;
}

fn settings_to_toml(s: &Settings) -> String {
    toml::to_string(s).expect("settings serialise to TOML")
}

/// Adapts a [`PolicyPlugin`] to the seam; panics become safe defaults and a
/// message on stderr (a policy call has no error channel).
#[derive(Debug)]
pub struct GuardedPolicy<T>(pub T);

fn guarded<R>(what: &str, fallback: impl FnOnce() -> R, f: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        eprintln!("zkpipe: policy plugin panicked in {what}; using the default decision");
        fallback()
    })
}

impl<T: Policy> PolicyFfi for GuardedPolicy<T> {
    fn name(&self) -> RString {
        guarded("name", || "policy-plugin".into(), || self.0.name().into())
    }
    fn settings_toml(&self) -> RString {
        guarded(
            "settings",
            || settings_to_toml(&Settings::default()).into(),
            || settings_to_toml(self.0.settings()).into(),
        )
    }
    fn pick(&self, queue: RSlice<'_, Ticket>) -> usize {
        let pick = guarded("pick", || 0, || self.0.pick(queue.as_slice()));
        pick.min(queue.len().saturating_sub(1))
    }
    fn place(&self, ticket: &Ticket, load: RSlice<'_, u64>) -> usize {
        let load: Vec<usize> = load.iter().map(|&l| l as usize).collect();
        guarded("place", || 0, || self.0.place(ticket, &load)).min(load.len().saturating_sub(1))
    }
    fn admit(&self, need: u64, in_use: u64, budget: u64) -> bool {
        guarded(
            "admit",
            || in_use + need <= budget,
            || self.0.admit(need, in_use, budget),
        )
    }
}

/// Creates a plugin policy from TOML knobs (what the export macro calls).
pub fn create_boxed<T: PolicyPlugin>(settings_toml: &str) -> RResult<PolicyBox, RString> {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let mut s = Settings::default();
        s.merge_toml(settings_toml)?;
        T::create(s)
    }));
    match result {
        Ok(Ok(p)) => RResult::ROk(PolicyFfi_TO::from_value(
            GuardedPolicy(p),
            abi_stable::sabi_trait::TD_Opaque,
        )),
        Ok(Err(e)) => RResult::RErr(e.to_string().into()),
        Err(_) => RResult::RErr("the policy plugin panicked while being created".into()),
    }
}

/// Exports a [`PolicyPlugin`] as this library's root module:
///
/// ```text
/// zkpipe_core::export_policy!(RoundRobin);
/// ```
#[macro_export]
macro_rules! export_policy {
    ($policy:ty) => {
        #[::abi_stable::export_root_module]
        pub fn zkpipe_policy_root_module() -> $crate::sched::plugin::PolicyModRef {
            use ::abi_stable::prefix_type::PrefixTypeTrait;
            extern "C" fn abi_version() -> u32 {
                $crate::sched::plugin::POLICY_ABI_VERSION
            }
            extern "C" fn new(
                settings_toml: ::abi_stable::std_types::RStr<'_>,
            ) -> ::abi_stable::std_types::RResult<
                $crate::sched::plugin::PolicyBox,
                ::abi_stable::std_types::RString,
            > {
                $crate::sched::plugin::create_boxed::<$policy>(settings_toml.as_str())
            }
            $crate::sched::plugin::PolicyMod { abi_version, new }.leak_into_prefix()
        }
    };
}

/// A policy loaded from a plugin, seen by the engine as any other.
struct PluginPolicy {
    inner: PolicyBox,
    name: String,
    settings: Settings,
}

impl Policy for PluginPolicy {
    fn name(&self) -> &str {
        &self.name
    }
    fn settings(&self) -> &Settings {
        &self.settings
    }
    fn pick(&self, queue: &[Ticket]) -> usize {
        self.inner.pick(queue.into())
    }
    fn place(&self, ticket: &Ticket, load: &[usize]) -> usize {
        let load: Vec<u64> = load.iter().map(|&l| l as u64).collect();
        self.inner.place(ticket, load.as_slice().into())
    }
    fn admit(&self, need: u64, in_use: u64, budget: u64) -> bool {
        self.inner.admit(need, in_use, budget)
    }
}

/// Loads a policy plugin and creates its policy on top of `base` knobs, then
/// applies `overrides`. The library stays loaded for the life of the process.
///
/// # Errors
/// [`Error::InvalidInput`] naming the path and the reason (not a complete
/// shared object for this machine, not a policy plugin, another ABI
/// version, the plugin refused the knobs).
pub fn load_policy(
    path: &Path,
    base: &Settings,
    overrides: &[(String, String)],
) -> Result<Arc<dyn Policy>, Error> {
    let fail =
        |why: String| Error::InvalidInput(format!("policy plugin {}: {why}", path.display()));
    // A truncated library would crash the process inside dlopen (SIGBUS).
    crate::loader::elf::check_shared_object(path).map_err(fail)?;
    let header = lib_header_from_path(path)
        .map_err(|e| fail(e.to_string().lines().take(6).collect::<Vec<_>>().join(" ")))?;
    let module = header.init_root_module::<PolicyModRef>().map_err(|e| {
        fail(format!(
            "incompatible interface: {}",
            e.to_string().lines().next().unwrap_or("")
        ))
    })?;
    let abi = (module.abi_version())();
    if abi != POLICY_ABI_VERSION {
        return Err(fail(format!(
            "built for policy ABI {abi}, this host speaks {POLICY_ABI_VERSION}"
        )));
    }
    let mut wanted = base.clone();
    for (k, v) in overrides {
        wanted.set(k, v)?;
    }
    let inner = match (module.new())(settings_to_toml(&wanted).as_str().into()) {
        RResult::ROk(p) => p,
        RResult::RErr(e) => return Err(fail(e.into_string())),
    };
    let mut settings = Settings::default();
    settings
        .merge_toml(inner.settings_toml().as_str())
        .map_err(|e| fail(format!("its settings: {e}")))?;
    // The host's explicit overrides win over the plugin's presets.
    for (k, v) in overrides {
        settings.set(k, v)?;
    }
    Ok(Arc::new(PluginPolicy {
        name: inner.name().into_string(),
        inner,
        settings,
    }))
}
