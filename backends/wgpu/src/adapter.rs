//! Finding the adapters, describing them, and saying why there is none.

use std::panic::catch_unwind;

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
/// found it; `None`, with a note on stderr, when there is none.
#[cfg(test)]
pub(crate) fn test_adapter() -> Option<(Option<wgpu::Instance>, wgpu::Adapter)> {
    let (instance, adapters, notes) = discover();
    let Some((adapter, _)) = adapters.into_iter().next() else {
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
        notes.push(
            "no wgpu adapter found (no Vulkan/Metal/DX12 driver; on Linux install a Vulkan \
             driver, e.g. mesa-vulkan-drivers for lavapipe, and its loader libvulkan1)"
                .into(),
        );
    }
    (Some(instance), adapters, notes)
}
