//! Times shader compilation and a few op sizes on each variant:
//! `cargo run -p zkpipe-backend-wgpu --example probe -- [auto|off] [max log]`.

use std::time::Instant;
use zkpipe_backend_wgpu::WgpuBackend;
use zkpipe_core::plugin::{
    AcceleratorImpl, BackendConfig, BackendPlugin, BasesRef, KeyValue, MsmConfig, NttConfig,
};
use zkpipe_core::{backend::reference, util::sample};

fn main() {
    let mut args = std::env::args().skip(1);
    let int64 = args.next().unwrap_or_else(|| "auto".into());
    let max_log: u32 = args.next().and_then(|v| v.parse().ok()).unwrap_or(12);
    let cfg = BackendConfig {
        ext: vec![KeyValue {
            key: "int64".into(),
            value: int64.clone().into(),
        }]
        .into(),
        ..Default::default()
    };
    let be = WgpuBackend::create(&cfg).unwrap();
    println!("{}", be.info().notes);
    for log in [1u32, 10, max_log] {
        let mut v = sample::scalars(1 << log, 1);
        let want = (log <= 10).then(|| {
            let mut w = reference::dft(&v, Default::default(), None);
            reference::bit_reverse_permute(&mut w);
            w
        });
        let t = Instant::now();
        be.ntt(
            &mut v,
            &NttConfig {
                order: zkpipe_core::plugin::NttOrder::NR,
                ..Default::default()
            },
        )
        .unwrap();
        let ok = want.map(|w| w == v);
        println!(
            "int64={int64} ntt 2^{log}: {:.3} s, correct {ok:?}",
            t.elapsed().as_secs_f64()
        );
    }
    for log in [1u32, 8, 10, max_log] {
        let n = 1usize << log;
        let b = sample::g1_points(n, 2);
        let s = sample::scalars(n, 3);
        let t = Instant::now();
        let got = be
            .msm_g1(BasesRef::Host((&b[..]).into()), &s, &MsmConfig::default())
            .unwrap();
        let dt = t.elapsed().as_secs_f64();
        let ok = got.to_affine() == reference::msm_g1(&b, &s).to_affine();
        println!("int64={int64} msm 2^{log}: {dt:.3} s, correct {ok}");
    }
}
