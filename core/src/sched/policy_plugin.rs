//! Scheduling policies as plugins: a `cdylib` implements [`Policy`] and
//! [`PolicyPlugin`], exports it with [`export_policy!`](crate::export_policy),
//! and `zkpipe bench batch --policy path/to/libzkpipe_policy_x.so` loads it —
//! the same abi_stable mechanism as backends, with the same guarantees:
//! layout and version checked at load, panics never cross the seam.
//!
//! A plugin can adapt while the engine runs: its [`Policy::adjust`] sees an
//! [`ObservationFfi`] and answers [`LimitsFfi`], which the host keeps
//! [`Limits::within`] the engine's ceiling like any policy's answer.
//!
//! Compatibility: `adjust` came with policy ABI 2. abi_stable's layout check
//! accepts a plugin whose vtable is longer than the host's but refuses a
//! shorter one, so a plugin built before `adjust` cannot load into this host
//! whatever its version says: it is refused as built against another policy
//! interface, to be rebuilt. The version was bumped as well so that a host
//! from before `adjust` refuses a plugin that has one, instead of running it
//! with its `adjust` never called.

#![allow(non_local_definitions)] // emitted by #[sabi_trait]

use abi_stable::library::{LibHeader, RootModule, lib_header_from_path};
use abi_stable::std_types::{RBox, ROption, RResult, RSlice, RStr, RString};
use abi_stable::{
    StableAbi, declare_root_module_statics, package_version_strings, sabi_trait,
    sabi_types::VersionStrings,
};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::engine::Span;
use super::policy::{Limits, Observation, Policy, Ticket};
use super::settings::Settings;
use crate::Error;
use crate::stage::Stage;

/// Version of the policy plugin ABI; the loader refuses others. 2: `adjust`.
pub const POLICY_ABI_VERSION: u32 = 2;

/// [`Limits`] as they cross the seam.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitsFfi {
    /// Witness syntheses at once.
    pub synthesis: u64,
    /// Host SpMVs at once.
    pub spmv: u64,
    /// Partitions synthesized ahead of the devices.
    pub lookahead: u64,
}

impl From<Limits> for LimitsFfi {
    fn from(l: Limits) -> Self {
        LimitsFfi {
            synthesis: l.synthesis as u64,
            spmv: l.spmv as u64,
            lookahead: l.lookahead as u64,
        }
    }
}

impl From<LimitsFfi> for Limits {
    /// Values past `usize` saturate (the engine clamps them anyway).
    fn from(l: LimitsFfi) -> Self {
        let n = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        Limits {
            synthesis: n(l.synthesis),
            spmv: n(l.spmv),
            lookahead: n(l.lookahead),
        }
    }
}

/// A [`Span`] as it crosses the seam, borrowing its lane.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub struct SpanFfi<'a> {
    /// Job id.
    pub job: u64,
    /// Partition index.
    pub partition: u32,
    /// The stage, as a fixed code: 0 witness, 1 spmv, 2 quotient, 3 msm,
    /// 4 msm_g2, 5 assemble, 6 dealloc. Stages added later get new codes;
    /// a plugin leaves out spans whose code it does not know.
    pub stage: u8,
    /// Worker lane.
    pub lane: RStr<'a>,
    /// Device index for device stages.
    pub device: ROption<u64>,
    /// Start, ms since the engine started.
    pub start_ms: f64,
    /// End, ms since the engine started.
    pub end_ms: f64,
}

fn stage_code(stage: Stage) -> u8 {
    match stage {
        Stage::Witness => 0,
        Stage::Spmv => 1,
        Stage::Quotient => 2,
        Stage::Msm => 3,
        Stage::MsmG2 => 4,
        Stage::Assemble => 5,
        Stage::Dealloc => 6,
    }
}

fn stage_from_code(code: u8) -> Option<Stage> {
    Some(match code {
        0 => Stage::Witness,
        1 => Stage::Spmv,
        2 => Stage::Quotient,
        3 => Stage::Msm,
        4 => Stage::MsmG2,
        5 => Stage::Assemble,
        6 => Stage::Dealloc,
        _ => return None,
    })
}

impl<'a> From<&'a Span> for SpanFfi<'a> {
    fn from(s: &'a Span) -> Self {
        SpanFfi {
            job: s.job,
            partition: s.partition,
            stage: stage_code(s.stage),
            lane: s.lane.as_str().into(),
            device: s.device.map(|d| d as u64).into(),
            start_ms: s.start_ms,
            end_ms: s.end_ms,
        }
    }
}

impl SpanFfi<'_> {
    /// The span, or `None` for a stage this build does not know.
    pub fn to_span(&self) -> Option<Span> {
        Some(Span {
            job: self.job,
            partition: self.partition,
            stage: stage_from_code(self.stage)?,
            lane: self.lane.as_str().to_string(),
            device: self
                .device
                .into_option()
                .map(|d| usize::try_from(d).unwrap_or(usize::MAX)),
            start_ms: self.start_ms,
            end_ms: self.end_ms,
        })
    }
}

/// An [`Observation`] as it crosses the seam: plain data, borrowed from
/// the engine for the length of one `adjust` call.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub struct ObservationFfi<'a> {
    /// Milliseconds since the engine started (the spans' clock).
    pub now_ms: f64,
    /// The most recent spans, in completion order (a bounded window).
    pub recent: RSlice<'a, SpanFfi<'a>>,
    /// The limits in force.
    pub limits: LimitsFfi,
    /// The most each limit can be: the threads the engine started.
    pub ceiling: LimitsFfi,
    /// Partitions synthesized and waiting for a host SpMV.
    pub waiting_spmv: u64,
    /// Partitions ready and waiting for a device.
    pub waiting_device: u64,
    /// Devices.
    pub devices: u64,
}

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
    /// See [`Policy::adjust`] (policy ABI 2).
    fn adjust(&self, seen: &ObservationFfi<'_>) -> ROption<LimitsFfi>;
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
    fn adjust(&self, seen: &ObservationFfi<'_>) -> ROption<LimitsFfi> {
        let n = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        let answer = guarded(
            "adjust",
            || None,
            || {
                let recent: Vec<Span> = seen.recent.iter().filter_map(SpanFfi::to_span).collect();
                self.0.adjust(&Observation {
                    now_ms: seen.now_ms,
                    recent: &recent,
                    limits: seen.limits.into(),
                    ceiling: seen.ceiling.into(),
                    waiting_spmv: n(seen.waiting_spmv),
                    waiting_device: n(seen.waiting_device),
                    devices: n(seen.devices),
                })
            },
        );
        answer.map(LimitsFfi::from).into()
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
///
/// The hidden `abi_version = N` form exists for the loader's tests (a plugin
/// claiming another policy ABI version).
#[macro_export]
macro_rules! export_policy {
    ($policy:ty) => {
        $crate::export_policy!(
            $policy,
            abi_version = $crate::sched::policy_plugin::POLICY_ABI_VERSION
        );
    };
    ($policy:ty, abi_version = $abi:expr) => {
        #[::abi_stable::export_root_module]
        pub fn zkpipe_policy_root_module() -> $crate::sched::policy_plugin::PolicyModRef {
            use ::abi_stable::prefix_type::PrefixTypeTrait;
            extern "C" fn abi_version() -> u32 {
                $abi
            }
            extern "C" fn new(
                settings_toml: ::abi_stable::std_types::RStr<'_>,
            ) -> ::abi_stable::std_types::RResult<
                $crate::sched::policy_plugin::PolicyBox,
                ::abi_stable::std_types::RString,
            > {
                $crate::sched::policy_plugin::create_boxed::<$policy>(settings_toml.as_str())
            }
            $crate::sched::policy_plugin::PolicyMod { abi_version, new }.leak_into_prefix()
        }
    };
}

/// A policy loaded from a plugin, seen by the engine as any other.
struct PluginPolicy {
    inner: PolicyBox,
    name: String,
    settings: Settings,
    /// Whether an out-of-range answer from `adjust` was reported (once:
    /// the engine asks after every partition).
    warned: AtomicBool,
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
    fn adjust(&self, seen: &Observation<'_>) -> Option<Limits> {
        let recent: Vec<SpanFfi<'_>> = seen.recent.iter().map(SpanFfi::from).collect();
        let asked: Limits = self
            .inner
            .adjust(&ObservationFfi {
                now_ms: seen.now_ms,
                recent: recent.as_slice().into(),
                limits: seen.limits.into(),
                ceiling: seen.ceiling.into(),
                waiting_spmv: seen.waiting_spmv as u64,
                waiting_device: seen.waiting_device as u64,
                devices: seen.devices as u64,
            })
            .into_option()?
            .into();
        // The engine clamps every policy's answer the same way; a plugin's
        // out-of-range one is also worth a word, as it is likely a bug.
        let kept = asked.within(seen.ceiling);
        if kept != asked && !self.warned.swap(true, Ordering::Relaxed) {
            eprintln!(
                "zkpipe: policy plugin `{}` asked for limits out of range ({asked:?}, ceiling {:?}); \
                 using {kept:?} (later ones are clamped without a word)",
                self.name, seen.ceiling
            );
        }
        Some(kept)
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
    crate::backend::loader::elf::check_shared_object(path).map_err(fail)?;
    let header = lib_header_from_path(path)
        .map_err(|e| fail(e.to_string().lines().take(6).collect::<Vec<_>>().join(" ")))?;
    policy_from_header(header, base, overrides, fail)
}

/// The gist of abi_stable's layout error, which runs to pages: its
/// `Error:` line and the expected and found values after it.
fn layout_reason(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let Some(i) = lines.iter().position(|l| l.starts_with("Error:")) else {
        return format!(
            "abi_stable: {}",
            lines.first().unwrap_or(&"layout mismatch")
        );
    };
    let what = lines[i].trim_start_matches("Error:").trim();
    match lines.get(i + 1..i + 5) {
        Some(["Expected:", expected, "Found:", found]) => {
            format!("abi_stable: {what}; expected {expected}, found {found}")
        }
        _ => format!("abi_stable: {what}"),
    }
}

/// [`load_policy`] from the library's header on.
fn policy_from_header(
    header: &LibHeader,
    base: &Settings,
    overrides: &[(String, String)],
    fail: impl Fn(String) -> Error,
) -> Result<Arc<dyn Policy>, Error> {
    let module = header.init_root_module::<PolicyModRef>().map_err(|e| {
        // A plugin built before policy ABI 2 lands here: its vtable lacks
        // `adjust`, and the layout check runs before its version is read.
        fail(format!(
            "incompatible policy plugin interface: built against another \
             zkpipe-core's policy seam (this host speaks policy ABI \
             {POLICY_ABI_VERSION}, which added `adjust`); rebuild the plugin \
             ({})",
            layout_reason(&e.to_string())
        ))
    })?;
    let abi = (module.abi_version())();
    if abi != POLICY_ABI_VERSION {
        return Err(fail(format!(
            "built for policy ABI {abi}, this host speaks policy ABI \
             {POLICY_ABI_VERSION}; rebuild the plugin"
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
        warned: AtomicBool::new(false),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use abi_stable::prefix_type::PrefixTypeTrait;

    /// The seam as ABI 1 plugins were built: `PolicyFfi` without `adjust`.
    mod v1 {
        // The derive's accessors are read through the host's types only.
        #![allow(non_local_definitions, dead_code, clippy::wrong_self_convention)]
        use super::super::{Ticket, settings_to_toml};
        use crate::sched::settings::Settings;
        use abi_stable::library::RootModule;
        use abi_stable::std_types::{RBox, RResult, RSlice, RStr, RString};
        use abi_stable::{
            StableAbi, declare_root_module_statics, package_version_strings, sabi_trait,
            sabi_types::VersionStrings,
        };

        #[sabi_trait]
        pub trait PolicyFfi: Send + Sync {
            fn name(&self) -> RString;
            fn settings_toml(&self) -> RString;
            fn pick(&self, queue: RSlice<'_, Ticket>) -> usize;
            fn place(&self, ticket: &Ticket, load: RSlice<'_, u64>) -> usize;
            #[sabi(last_prefix_field)]
            fn admit(&self, need: u64, in_use: u64, budget: u64) -> bool;
        }

        pub type PolicyBox = PolicyFfi_TO<'static, RBox<()>>;

        #[repr(C)]
        #[derive(StableAbi)]
        #[sabi(kind(Prefix(prefix_ref = PolicyModRef)))]
        #[sabi(missing_field(panic))]
        pub struct PolicyMod {
            pub abi_version: extern "C" fn() -> u32,
            #[sabi(last_prefix_field)]
            pub new: extern "C" fn(settings_toml: RStr<'_>) -> RResult<PolicyBox, RString>,
        }

        impl RootModule for PolicyModRef {
            declare_root_module_statics! {PolicyModRef}
            const BASE_NAME: &'static str = "zkpipe_policy";
            const NAME: &'static str = "zkpipe_policy";
            const VERSION_STRINGS: VersionStrings = package_version_strings!();
        }

        pub struct Old;

        impl PolicyFfi for Old {
            fn name(&self) -> RString {
                "old".into()
            }
            fn settings_toml(&self) -> RString {
                settings_to_toml(&Settings::default()).into()
            }
            fn pick(&self, _: RSlice<'_, Ticket>) -> usize {
                0
            }
            fn place(&self, _: &Ticket, _: RSlice<'_, u64>) -> usize {
                0
            }
            fn admit(&self, _: u64, _: u64, _: u64) -> bool {
                true
            }
        }

        extern "C" fn abi_version() -> u32 {
            1
        }

        extern "C" fn new(_: RStr<'_>) -> RResult<PolicyBox, RString> {
            RResult::ROk(PolicyFfi_TO::from_value(
                Old,
                abi_stable::sabi_trait::TD_Opaque,
            ))
        }

        pub fn module() -> PolicyModRef {
            use abi_stable::prefix_type::PrefixTypeTrait;
            PolicyMod { abi_version, new }.leak_into_prefix()
        }
    }

    /// Answers `answer`, or panics when told to.
    #[derive(Debug)]
    struct Fixed {
        settings: Settings,
        answer: Option<Limits>,
        panics: bool,
    }

    impl Policy for Fixed {
        fn name(&self) -> &str {
            "fixed"
        }
        fn settings(&self) -> &Settings {
            &self.settings
        }
        fn adjust(&self, seen: &Observation<'_>) -> Option<Limits> {
            assert!(!self.panics, "adjust panics");
            // The observation arrives whole, or the answer is withheld.
            let s = &seen.recent[0];
            let whole = seen.recent.len() == 1
                && (s.job, s.partition, s.stage, s.lane.as_str(), s.device)
                    == (3, 1, Stage::Msm, "dev0-w1", Some(0))
                && (s.start_ms, s.end_ms, seen.now_ms) == (5.0, 9.0, 10.0)
                && (seen.waiting_spmv, seen.waiting_device, seen.devices) == (2, 1, 1)
                && seen.limits == CEILING
                && seen.ceiling == CEILING;
            self.answer.filter(|_| whole)
        }
    }

    const CEILING: Limits = Limits {
        synthesis: 4,
        spmv: 2,
        lookahead: 3,
    };

    /// A plugin policy answering `answer` (or panicking), loaded in process
    /// through the loader's checks.
    fn plugin(answer: Option<Limits>, panics: bool) -> Arc<dyn Policy> {
        // `new` is an `extern "C" fn` and captures nothing: it reads its
        // answer from here (the loader calls it on this thread).
        thread_local! {
            static NEXT: std::cell::RefCell<(Option<Limits>, bool)> = const { std::cell::RefCell::new((None, false)) };
        }
        NEXT.with(|n| *n.borrow_mut() = (answer, panics));
        extern "C" fn abi_version() -> u32 {
            POLICY_ABI_VERSION
        }
        extern "C" fn new(settings_toml: RStr<'_>) -> RResult<PolicyBox, RString> {
            let (answer, panics) = NEXT.with(|n| *n.borrow());
            let mut settings = Settings::default();
            settings.merge_toml(settings_toml.as_str()).unwrap();
            RResult::ROk(PolicyFfi_TO::from_value(
                GuardedPolicy(Fixed {
                    settings,
                    answer,
                    panics,
                }),
                abi_stable::sabi_trait::TD_Opaque,
            ))
        }
        let header = LibHeader::from_module(PolicyMod { abi_version, new }.leak_into_prefix());
        policy_from_header(&header, &Settings::default(), &[], |e| {
            Error::InvalidInput(e)
        })
        .unwrap()
    }

    fn ask(policy: &dyn Policy) -> Option<Limits> {
        let recent = [Span {
            job: 3,
            partition: 1,
            stage: Stage::Msm,
            lane: "dev0-w1".into(),
            device: Some(0),
            start_ms: 5.0,
            end_ms: 9.0,
        }];
        policy.adjust(&Observation {
            now_ms: 10.0,
            recent: &recent,
            limits: CEILING,
            ceiling: CEILING,
            waiting_spmv: 2,
            waiting_device: 1,
            devices: 1,
        })
    }

    #[test]
    fn stage_codes_round_trip_and_are_fixed() {
        for (code, stage) in Stage::ALL.into_iter().enumerate() {
            assert_eq!(stage_code(stage), code as u8);
            assert_eq!(stage_from_code(code as u8), Some(stage));
        }
        assert_eq!(stage_from_code(7), None);
    }

    #[test]
    fn a_plugins_adjust_crosses_the_seam_both_ways() {
        let next = Limits {
            synthesis: 1,
            spmv: 2,
            lookahead: 6,
        };
        assert_eq!(ask(&*plugin(Some(next), false)), Some(next));
        assert_eq!(ask(&*plugin(None, false)), None);
    }

    #[test]
    fn out_of_range_answers_are_kept_within_the_ceiling() {
        let asked = Limits {
            synthesis: 0,
            spmv: 99,
            lookahead: usize::MAX,
        };
        let kept = Limits {
            synthesis: 1,
            spmv: 2,
            lookahead: 12,
        };
        assert_eq!(ask(&*plugin(Some(asked), false)), Some(kept));
    }

    #[test]
    fn a_panicking_adjust_is_no_change() {
        let p = plugin(Some(CEILING), true);
        assert_eq!(ask(&*p), None);
        assert_eq!(p.name(), "fixed", "the policy still answers");
    }

    /// A policy ABI 1 plugin, built before `adjust`, is refused by the
    /// layout check (its vtable is shorter than the host's) with a reason
    /// that says what to do.
    #[test]
    fn a_plugin_built_before_adjust_is_refused_clearly() {
        let header = LibHeader::from_module(v1::module());
        let e = policy_from_header(&header, &Settings::default(), &[], Error::InvalidInput)
            .err()
            .expect("an ABI 1 plugin is refused")
            .to_string();
        for needle in [
            "incompatible policy plugin interface",
            &format!("policy ABI {POLICY_ABI_VERSION}"),
            "`adjust`",
            "rebuild the plugin",
            "abi_stable: too many fields; expected 8, found 7",
        ] {
            assert!(e.contains(needle), "{e:?} does not mention {needle:?}");
        }
        assert!(e.len() < 600, "the reason is a line, not pages: {e}");
    }
}
