//! Finding the adapters, describing them, and saying why there is none.

use std::ffi::OsString;
use std::panic::catch_unwind;
use std::path::{Path, PathBuf};

/// Adapter order: high-performance first.
fn rank(t: wgpu::DeviceType) -> u8 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    }
}

fn mib(b: u64) -> u64 {
    b >> 20
}

/// What `info` says about one adapter.
fn describe(i: usize, a: &wgpu::Adapter, info: &wgpu::AdapterInfo) -> String {
    let f = a.features();
    let l = a.limits();
    let yes = |b: bool| if b { "yes" } else { "no" };
    let subgroups = if f.contains(wgpu::Features::SUBGROUP) {
        format!("{}..{}", info.subgroup_min_size, info.subgroup_max_size)
    } else {
        "no".into()
    };
    format!(
        "device {i}: {} ({:?}, {:?}, driver {} {}): SHADER_INT64 {}, subgroups {subgroups}, \
         max storage binding {} MiB, max buffer {} MiB, workgroup memory {} KiB",
        info.name,
        info.device_type,
        info.backend,
        info.driver,
        info.driver_info,
        yes(f.contains(wgpu::Features::SHADER_INT64)),
        mib(l.max_storage_buffer_binding_size),
        mib(l.max_buffer_size),
        l.max_compute_workgroup_storage_size >> 10,
    )
}

/// The first adapter, for the crate's device tests, with the instance that
/// found it; `None`, with a note on stderr, when there is none, and the
/// test then passes without running.
///
/// # Panics
/// When there is none and `ZKPIPE_REQUIRE_ADAPTER` is set (CI sets it, with
/// lavapipe installed), so that a missing adapter fails the tests instead.
#[cfg(test)]
pub(crate) fn test_adapter() -> Option<(Option<wgpu::Instance>, wgpu::Adapter)> {
    let (instance, adapters, notes) = discover();
    let Some((adapter, _)) = adapters.into_iter().next() else {
        assert!(
            std::env::var_os("ZKPIPE_REQUIRE_ADAPTER").is_none(),
            "ZKPIPE_REQUIRE_ADAPTER is set but there is no wgpu adapter: {notes:?}"
        );
        eprintln!("no wgpu adapter: {notes:?}");
        return None;
    };
    Some((instance, adapter))
}

/// Every adapter wgpu finds, high-performance first, with its description;
/// with none, the notes say why.
pub(crate) fn discover() -> (
    Option<wgpu::Instance>,
    Vec<(wgpu::Adapter, wgpu::AdapterInfo)>,
    Vec<String>,
) {
    let found = catch_unwind(|| {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
        (instance, adapters)
    });
    let (instance, adapters) = match found {
        Ok(v) => v,
        Err(_) => return (None, vec![], vec!["wgpu failed to start (panicked)".into()]),
    };
    let mut adapters: Vec<(wgpu::Adapter, wgpu::AdapterInfo)> = adapters
        .into_iter()
        .map(|adapter| {
            let info = adapter.get_info();
            (adapter, info)
        })
        .collect();
    adapters.sort_by_key(|(_, info)| rank(info.device_type));
    let mut notes: Vec<String> = adapters
        .iter()
        .enumerate()
        .map(|(i, (adapter, info))| describe(i, adapter, info))
        .collect();
    if adapters.is_empty() {
        notes.push(no_adapter_note());
    }
    (Some(instance), adapters, notes)
}

/// Why there is no adapter, as far as this machine shows it.
#[cfg(target_os = "linux")]
fn no_adapter_note() -> String {
    why_no_adapter(&VulkanSetup::of_this_process())
}

/// Why there is no adapter: off Linux there is no Vulkan setup to inspect.
#[cfg(not(target_os = "linux"))]
fn no_adapter_note() -> String {
    "no wgpu adapter found (no Vulkan, Metal or DX12 driver gave one)".into()
}

/// The Vulkan loader library wgpu opens (ash's `Entry::load` on Linux).
const VULKAN_LOADER: &str = "libvulkan.so.1";

/// Folders of Vulkan driver manifests checked when neither
/// `VK_DRIVER_FILES` nor `VK_ICD_FILENAMES` is set: the usual ones (the
/// loader also reads `$XDG_CONFIG_DIRS`, `$XDG_DATA_DIRS` and
/// `~/.local/share`, so finding none here is a likely cause, not a proof).
const ICD_DIRS: [&str; 3] = [
    "/usr/share/vulkan/icd.d",
    "/etc/vulkan/icd.d",
    "/usr/local/share/vulkan/icd.d",
];

/// What the no-adapter diagnosis looks at (gathered from the process, or
/// built by the tests).
#[derive(Debug)]
struct VulkanSetup {
    /// Whether the loader library opens, else the dynamic loader's message.
    loader: Result<(), String>,
    /// The variable that names the driver manifests, when one is set.
    driver_files_var: Option<&'static str>,
    /// Where manifests were looked for: that variable's entries, else [`ICD_DIRS`].
    searched: Vec<PathBuf>,
    /// The manifests found there.
    manifests: Vec<PathBuf>,
    /// What is wrong with `XDG_RUNTIME_DIR`, if anything.
    runtime_dir: Option<String>,
}

impl VulkanSetup {
    #[cfg(target_os = "linux")]
    fn of_this_process() -> VulkanSetup {
        let (driver_files_var, searched) = manifest_search(|v| std::env::var_os(v));
        VulkanSetup {
            loader: open_loader(),
            driver_files_var,
            manifests: manifests_in(&searched),
            searched,
            runtime_dir: runtime_dir_problem(std::env::var_os("XDG_RUNTIME_DIR")),
        }
    }
}

/// Where the loader reads driver manifests: the entries of
/// `VK_DRIVER_FILES` (or of the older `VK_ICD_FILENAMES`), which replace
/// the usual folders when set, else [`ICD_DIRS`].
fn manifest_search(env: impl Fn(&str) -> Option<OsString>) -> (Option<&'static str>, Vec<PathBuf>) {
    for var in ["VK_DRIVER_FILES", "VK_ICD_FILENAMES"] {
        if let Some(v) = env(var).filter(|v| !v.is_empty()) {
            return (Some(var), std::env::split_paths(&v).collect());
        }
    }
    (None, ICD_DIRS.iter().map(PathBuf::from).collect())
}

/// The manifests among `searched`: a file entry is one, a folder holds
/// its `*.json` files.
fn manifests_in(searched: &[PathBuf]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in searched {
        if entry.is_file() {
            found.push(entry.clone());
        } else if let Ok(dir) = std::fs::read_dir(entry) {
            let mut jsons: Vec<PathBuf> = dir
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
                .collect();
            jsons.sort();
            found.extend(jsons);
        }
    }
    found
}

/// What is wrong with `XDG_RUNTIME_DIR` (its value given): unset or
/// empty, not a folder, or not writable by this process.
fn runtime_dir_problem(value: Option<OsString>) -> Option<String> {
    let Some(value) = value.filter(|v| !v.is_empty()) else {
        return Some("XDG_RUNTIME_DIR is unset".into());
    };
    let dir = Path::new(&value);
    if !dir.is_dir() {
        return Some(format!(
            "XDG_RUNTIME_DIR ({}) is not a folder",
            dir.display()
        ));
    }
    if !writable(dir) {
        return Some(format!(
            "XDG_RUNTIME_DIR ({}) is not writable",
            dir.display()
        ));
    }
    None
}

/// Whether this process may create files in `dir`.
#[cfg(unix)]
fn writable(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false; // a NUL in the value: nobody can use it
    };
    // SAFETY: `path` is a NUL-terminated string that outlives the call.
    unsafe { libc::access(path.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

#[cfg(not(unix))]
fn writable(dir: &Path) -> bool {
    std::fs::metadata(dir).is_ok_and(|m| !m.permissions().readonly())
}

/// Opens and closes the Vulkan loader library, as wgpu would open it.
///
/// # Errors
/// The dynamic loader's message when it cannot be opened.
#[cfg(target_os = "linux")]
fn open_loader() -> Result<(), String> {
    let name = c"libvulkan.so.1";
    debug_assert_eq!(name.to_bytes(), VULKAN_LOADER.as_bytes());
    // SAFETY: `name` is NUL-terminated; a handle that opens is closed at
    // once, and dlerror's message is copied before any other dl* call on
    // this thread. Opening runs the loader's initialisers, as wgpu's own
    // (failed) attempt already did in this process.
    unsafe {
        libc::dlerror(); // clear an earlier message
        let handle = libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        if handle.is_null() {
            let msg = libc::dlerror();
            return Err(if msg.is_null() {
                "no reason given".into()
            } else {
                std::ffi::CStr::from_ptr(msg).to_string_lossy().into_owned()
            });
        }
        libc::dlclose(handle);
    }
    Ok(())
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The no-adapter note for `setup`: the cause where the machine shows it (no
/// loader library), "likely" and "possible" causes where it is a guess, and
/// else what was found and how to learn more.
fn why_no_adapter(setup: &VulkanSetup) -> String {
    let head = "no wgpu adapter found";
    if let Err(e) = &setup.loader {
        return format!(
            "{head}; cause: the Vulkan loader {VULKAN_LOADER} cannot be opened ({e}): install \
             it (Debian/Ubuntu: libvulkan1) and a Vulkan driver (e.g. mesa-vulkan-drivers for \
             lavapipe)"
        );
    }
    let searched = match setup.driver_files_var {
        Some(var) => format!(
            "{var} = {} (the loader reads only these while it is set)",
            list(&setup.searched)
        ),
        None => list(&setup.searched),
    };
    let mut parts = vec![head.to_string()];
    if setup.manifests.is_empty() {
        parts.push(format!(
            "likely cause: no Vulkan driver manifest (ICD *.json) in {searched}: install a \
             Vulkan driver (e.g. mesa-vulkan-drivers for lavapipe) or point VK_DRIVER_FILES at \
             its manifest"
        ));
    }
    if let Some(problem) = &setup.runtime_dir {
        parts.push(format!(
            "possible cause: {problem} (Mesa's drivers, lavapipe among them, want it set to \
             a writable folder of this user's, mode 0700)"
        ));
    }
    if !setup.manifests.is_empty() {
        parts.push(format!(
            "the Vulkan loader {VULKAN_LOADER} opens and driver manifests were found ({}), but \
             no driver gave an adapter (VK_LOADER_DEBUG=all shows why the loader skipped each)",
            list(&setup.manifests)
        ));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(manifests: &[&str], runtime_dir: Option<&str>) -> VulkanSetup {
        VulkanSetup {
            loader: Ok(()),
            driver_files_var: None,
            searched: ICD_DIRS.iter().map(PathBuf::from).collect(),
            manifests: manifests.iter().map(PathBuf::from).collect(),
            runtime_dir: runtime_dir.map(String::from),
        }
    }

    /// A loader that does not open is the cause, whatever else is wrong.
    #[test]
    fn missing_loader_is_the_cause() {
        let mut s = setup(&[], Some("XDG_RUNTIME_DIR is unset"));
        s.loader = Err("libvulkan.so.1: cannot open shared object file".into());
        let note = why_no_adapter(&s);
        assert!(note.contains("cause: the Vulkan loader libvulkan.so.1 cannot be opened (libvulkan.so.1: cannot open shared object file)"), "{note}");
        assert!(
            !note.contains("likely") && !note.contains("XDG_RUNTIME_DIR"),
            "{note}"
        );
    }

    /// No manifest: a likely cause, naming every folder searched.
    #[test]
    fn no_manifest_names_the_folders() {
        let note = why_no_adapter(&setup(&[], None));
        assert!(
            note.contains("likely cause: no Vulkan driver manifest"),
            "{note}"
        );
        for dir in ICD_DIRS {
            assert!(note.contains(dir), "{note}");
        }
        assert!(!note.contains("XDG_RUNTIME_DIR"), "{note}");
        let mut s = setup(&[], None);
        (s.driver_files_var, s.searched) = (Some("VK_DRIVER_FILES"), vec!["/x/a.json".into()]);
        let note = why_no_adapter(&s);
        assert!(
            note.contains("VK_DRIVER_FILES = /x/a.json (the loader reads only these"),
            "{note}"
        );
    }

    /// Drivers present but XDG_RUNTIME_DIR unusable: a possible cause, with
    /// the drivers found and how to learn more.
    #[test]
    fn runtime_dir_is_a_possible_cause() {
        let lvp = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";
        let note = why_no_adapter(&setup(&[lvp], Some("XDG_RUNTIME_DIR is unset")));
        assert!(
            note.contains("possible cause: XDG_RUNTIME_DIR is unset"),
            "{note}"
        );
        assert!(
            note.contains(lvp) && note.contains("VK_LOADER_DEBUG"),
            "{note}"
        );
        assert!(!note.contains("likely cause"), "{note}");
        let note = why_no_adapter(&setup(&[lvp], None));
        assert!(
            !note.contains("XDG_RUNTIME_DIR") && note.contains("no driver gave an adapter"),
            "{note}"
        );
    }

    #[test]
    fn manifest_search_follows_the_variables() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        let (var, searched) = manifest_search(env(&[]));
        assert_eq!((var, searched.len()), (None, ICD_DIRS.len()));
        let (var, searched) = manifest_search(env(&[("VK_ICD_FILENAMES", "/a.json:/b")]));
        assert_eq!(var, Some("VK_ICD_FILENAMES"));
        assert_eq!(searched, [PathBuf::from("/a.json"), PathBuf::from("/b")]);
        // VK_DRIVER_FILES wins over the older name, as in the loader; empty counts as unset.
        let both = env(&[("VK_ICD_FILENAMES", "/a.json"), ("VK_DRIVER_FILES", "/c")]);
        assert_eq!(manifest_search(both).0, Some("VK_DRIVER_FILES"));
        assert_eq!(manifest_search(env(&[("VK_DRIVER_FILES", "")])).0, None);
    }

    #[test]
    fn manifests_in_files_and_folders() {
        let dir = tempfile::tempdir().unwrap();
        let icd = dir.path().join("icd.d");
        std::fs::create_dir(&icd).unwrap();
        for name in ["b.json", "a.json", "readme.txt"] {
            std::fs::write(icd.join(name), "{}").unwrap();
        }
        let lone = dir.path().join("lone.json");
        std::fs::write(&lone, "{}").unwrap();
        let missing = dir.path().join("missing");
        let found = manifests_in(&[missing, icd.clone(), lone.clone()]);
        assert_eq!(found, [icd.join("a.json"), icd.join("b.json"), lone]);
    }

    #[test]
    fn runtime_dir_problems() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        assert_eq!(
            runtime_dir_problem(None).unwrap(),
            "XDG_RUNTIME_DIR is unset"
        );
        assert_eq!(
            runtime_dir_problem(Some("".into())).unwrap(),
            "XDG_RUNTIME_DIR is unset"
        );
        let p = runtime_dir_problem(Some(file.clone().into())).unwrap();
        assert!(p.ends_with("is not a folder"), "{p}");
        let p = runtime_dir_problem(Some(dir.path().join("missing").into())).unwrap();
        assert!(p.ends_with("is not a folder"), "{p}");
        assert_eq!(runtime_dir_problem(Some(dir.path().into())), None);
    }

    /// The loader library opens where a driver is installed or an adapter
    /// is required (CI installs libvulkan1 with lavapipe).
    #[cfg(target_os = "linux")]
    #[test]
    fn loader_opens_here() {
        if std::env::var_os("ZKPIPE_REQUIRE_ADAPTER").is_some()
            || Path::new("/usr/share/vulkan/icd.d").is_dir()
        {
            assert_eq!(open_loader(), Ok(()));
        }
    }

    /// `ZKPIPE_REQUIRE_ADAPTER` turns a device test that passes without an
    /// adapter into a failure: this test binary runs one device test again
    /// with no driver (VK_DRIVER_FILES at an empty folder), without and
    /// with the switch.
    #[test]
    fn require_adapter_switch_fails_device_tests() {
        let empty = tempfile::tempdir().unwrap();
        let run = |require: bool| {
            let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
            cmd.args(["--exact", "ntt::tests::small_tiles", "--test-threads=1"])
                .env("VK_DRIVER_FILES", empty.path())
                .env_remove("VK_ICD_FILENAMES")
                .env_remove("ZKPIPE_REQUIRE_ADAPTER");
            if require {
                cmd.env("ZKPIPE_REQUIRE_ADAPTER", "1");
            }
            cmd.output().unwrap()
        };
        let out = run(false);
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}");
        assert!(text.contains("1 passed"), "{text}");
        let out = run(true);
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{text}");
        assert!(
            text.contains("ZKPIPE_REQUIRE_ADAPTER is set but there is no wgpu adapter"),
            "{text}"
        );
    }
}
