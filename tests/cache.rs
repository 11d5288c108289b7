//! The key store and the R1CS cache heal themselves and let one process (or
//! thread) fill an entry while the others wait for it.

use std::sync::Arc;
use std::sync::Mutex;
use zkpipe::groth16::KeyStore;
use zkpipe::r1cs::cache::R1csCache;
use zkpipe::r1cs::circuit::CircuitSource;
use zkpipe::util::progress::Progress;
use zkpipe_circuits::BuiltinCircuit;

/// Keeps every note.
#[derive(Default)]
struct Notes(Mutex<Vec<String>>);

impl Progress for Notes {
    fn note(&self, message: &str) {
        self.0.lock().unwrap().push(message.to_string());
    }
}

impl Notes {
    fn count(&self, needle: &str) -> usize {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|n| n.contains(needle))
            .count()
    }
}

fn circuit(size: &str) -> BuiltinCircuit {
    BuiltinCircuit::new("squaring-chain", size).unwrap()
}

#[test]
fn broken_cached_keys_are_moved_aside_and_set_up_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = KeyStore::new(dir.path().join("keys"));
    let c = circuit("20");
    let r1cs = c.record().unwrap();
    let notes = Notes::default();
    let first = store.get_or_setup(&c, &r1cs, false, &notes).unwrap();
    assert_eq!(notes.count("insecure test keys"), 1);
    let params = first.dir.join("params.bin");
    let good = std::fs::read(&params).unwrap();

    // Truncated, garbled, and another circuit's description: each is
    // moved aside with a note, and new keys that work are made.
    type Breaking<'a> = (&'a str, Box<dyn Fn() + 'a>);
    let breakages: [Breaking<'_>; 3] = [
        (
            "truncated",
            Box::new(|| std::fs::write(&params, &good[..good.len() / 2]).unwrap()),
        ),
        (
            "garbled",
            Box::new(|| {
                let mut g = good.clone();
                for b in &mut g[200..400] {
                    *b ^= 0x5a;
                }
                std::fs::write(&params, g).unwrap()
            }),
        ),
        (
            "another circuit",
            Box::new(|| {
                std::fs::write(
                    first.dir.join("circuit.json"),
                    r#"{"circuit":"sha256","size":"1","synthetic":false}"#,
                )
                .unwrap()
            }),
        ),
    ];
    for (i, (what, breaking)) in breakages.iter().enumerate() {
        breaking();
        let notes = Notes::default();
        let keys = store.get_or_setup(&c, &r1cs, false, &notes).unwrap();
        assert_eq!(notes.count("cannot be used"), 1, "{what}");
        assert_eq!(notes.count("insecure test keys"), 1, "{what}");
        assert_eq!(
            std::fs::read(&params).unwrap(),
            good,
            "{what}: same seed, same keys"
        );
        assert_eq!(keys.params.vk.ic.len(), r1cs.num_inputs);
        let aside = std::fs::read_dir(dir.path().join("keys"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".broken-")
            })
            .count();
        assert_eq!(aside, i + 1, "{what}: the broken set is kept aside");
    }
    // A healthy entry is reused silently.
    let notes = Notes::default();
    store.get_or_setup(&c, &r1cs, false, &notes).unwrap();
    assert_eq!(notes.0.lock().unwrap().len(), 0);
}

#[test]
fn processes_filling_one_entry_set_it_up_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(KeyStore::new(dir.path().join("keys")));
    let c = Arc::new(circuit("2^9"));
    let r1cs = Arc::new(c.record().unwrap());
    let notes = Arc::new(Notes::default());
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (store, c, r1cs, notes) = (store.clone(), c.clone(), r1cs.clone(), notes.clone());
            std::thread::spawn(move || {
                store
                    .get_or_setup(&*c, &r1cs, false, &*notes)
                    .unwrap()
                    .params
                    .vk
                    .ic
                    .len()
            })
        })
        .collect();
    for w in workers {
        assert_eq!(w.join().unwrap(), r1cs.num_inputs);
    }
    assert_eq!(
        notes.count("insecure test keys"),
        1,
        "one setup for four callers"
    );
}

#[test]
fn a_corrupt_cached_r1cs_is_recorded_again() {
    let dir = tempfile::tempdir().unwrap();
    let cache = R1csCache::new(dir.path().join("r1cs"));
    let c = circuit("30");
    let notes = Notes::default();
    let first = cache.get_or_record(&c, &notes).unwrap();
    assert_eq!(notes.count("recorded squaring-chain 30"), 1);
    let path = cache.path(&c);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 7]).unwrap();
    let notes = Notes::default();
    let again = cache.get_or_record(&c, &notes).unwrap();
    assert_eq!(again, first);
    assert_eq!(notes.count("cannot be used"), 1);
    assert_eq!(notes.count("recorded squaring-chain 30"), 1);
    // Reused from the cache now.
    let notes = Notes::default();
    assert_eq!(cache.get_or_record(&c, &notes).unwrap(), first);
    assert_eq!(notes.0.lock().unwrap().len(), 0);
}
