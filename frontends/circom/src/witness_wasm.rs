//! Witnesses from circom's WebAssembly witness generator (`circuit_js/
//! circuit.wasm`) and an `input.json`, as `snarkjs wtns calculate` makes
//! them, run in wasmi (an interpreter: small to build, no JIT).
//!
//! The generator's interface (circom 2): the host passes field elements
//! through a "shared read/write memory" of `getFieldNumLen32()` 32-bit
//! words, least significant first (`writeSharedRWMemory(i, word)`,
//! `readSharedRWMemory(i)`); `getRawPrime()` puts the prime there; an input
//! signal is named by the 64-bit FNV-1a hash of its name, split into high
//! and low 32-bit halves, and set value by value (`setInputSignal(hi, lo,
//! i)`, arrays flattened in order) after `init(sanity_check)`;
//! `getWitness(i)` puts wire i's canonical value there. The module imports
//! four `runtime` functions; `exceptionHandler(code)` reports a failure
//! (an assert that does not hold, a missing or repeated signal) and the
//! message functions read text through `getMessageChar()`.

use serde_json::Value;
use wasmi::{
    Caller, Config, Engine, Extern, Instance, Linker, Module, Store, StoreLimits,
    StoreLimitsBuilder, TrapCode,
};

use zkpipe_core::ScalarField;
use zkpipe_core::{Curve, Error, Fr};

/// The most memory a witness generator may grow to: wasm32's whole space.
const MAX_MEMORY_BYTES: usize = 4 << 30;

/// The most witness values a generator may declare: it keeps each in its
/// memory, 32 bytes a value, so more cannot be real and would only inflate
/// the default fuel budget.
const MAX_WIRES: usize = MAX_MEMORY_BYTES / 32;

/// The most 32-bit words a field element may take: BLS12-381's and
/// BN254's r take 8; more is no circom prime and would make the host read
/// (and print) a number as large as the generator says.
const MAX_FIELD_WORDS: i32 = 16;

/// Fuel (wasmi's count of executed instructions) for loading a generator
/// and setting its inputs, and the base of a witness's budget.
const BASE_FUEL: u64 = 10_000_000_000;

/// Fuel per witness value on top of [`BASE_FUEL`]: about 10× the most
/// measured (bench log, "circom at 2^16 and 2^20": hash chain 5,320,
/// merkle 3,958, many_public 758, the 2^16 chain 4,819 per wire). With
/// [`MAX_WIRES`] the budget stays under 7·10^12, a few hours at the ~5·10^8
/// instructions a second measured there; `--wasm-fuel` raises it.
const FUEL_PER_WIRE: u64 = 50_000;

/// The default fuel budget of a witness of `wires` values.
pub fn default_fuel(wires: u64) -> u64 {
    BASE_FUEL.saturating_add(FUEL_PER_WIRE.saturating_mul(wires))
}

#[derive(Debug)]
struct Host {
    limits: StoreLimits,
    /// Text the generator printed before failing.
    message: String,
}

/// Reads the generator's pending message through `getMessageChar`.
fn read_message(caller: &mut Caller<'_, Host>) {
    let Some(Extern::Func(f)) = caller.get_export("getMessageChar") else {
        return;
    };
    let Ok(f) = f.typed::<(), i32>(&caller) else {
        return;
    };
    let mut text = String::new();
    // A bounded read: a message is a line, not a stream.
    while let Ok(c) = f.call(&mut *caller, ()) {
        if c == 0 || text.len() >= 4096 {
            break;
        }
        text.push(char::from(c as u8));
    }
    let m = &mut caller.data_mut().message;
    if !m.is_empty() {
        m.push_str("; ");
    }
    m.push_str(text.trim_end());
}

/// What `exceptionHandler`'s codes mean (circom 2's generators).
fn exception(code: i32) -> &'static str {
    match code {
        1 => "a signal was not found",
        2 => "too many signals were set",
        3 => "a signal was set twice",
        4 => "an assert of the circuit does not hold for these inputs",
        5 => "the generator ran out of memory",
        6 => "an input array was indexed past its size",
        _ => "the generator failed",
    }
}

/// A loaded witness generator.
#[derive(Debug)]
pub struct WitnessGenerator {
    store: Store<Host>,
    instance: Instance,
    /// Words per field element.
    n32: usize,
    name: String,
    /// Fuel for one [`WitnessGenerator::calculate`]; `None`: [`default_fuel`].
    fuel: Option<u64>,
    /// The budget of the call under way, for the message when it runs out.
    budget: u64,
    /// The wire count the witness must have, when the caller knows it.
    expected_wires: Option<usize>,
    /// The curve whose scalar field the generator computes in.
    curve: Curve,
}

fn wasm_error(name: &str, what: &str, e: impl std::fmt::Display) -> Error {
    Error::InvalidInput(format!("{name}: {what}: {e}"))
}

fn out_of_fuel(name: &str, budget: u64) -> Error {
    Error::InvalidInput(format!(
        "{name}: the witness generator ran past its budget of {budget} instructions \
         (an endless loop?); raise it with --wasm-fuel if the circuit really needs more"
    ))
}

impl WitnessGenerator {
    /// Compiles and instantiates `wasm`; `name` is used in messages.
    ///
    /// # Errors
    /// [`Error::InvalidEncoding`] for bytes that are not a WebAssembly
    /// module; [`Error::InvalidInput`] for a module that is not a circom 2
    /// witness generator (field elements of other than 1 to 16 words
    /// included), or one for another prime than BLS12-381's or BN254's r.
    pub fn new(name: &str, wasm: &[u8]) -> Result<WitnessGenerator, Error> {
        WitnessGenerator::with_fuel(name, wasm, None)
    }

    /// [`WitnessGenerator::new`] with at most `fuel` instructions for
    /// loading and for each [`WitnessGenerator::calculate`] (`None`:
    /// `BASE_FUEL` to load, [`default_fuel`] per witness).
    ///
    /// # Errors
    /// As [`WitnessGenerator::new`]; [`Error::InvalidInput`] when the
    /// generator runs out of fuel while loading.
    pub fn with_fuel(
        name: &str,
        wasm: &[u8],
        fuel: Option<u64>,
    ) -> Result<WitnessGenerator, Error> {
        let mut config = Config::default();
        config.consume_fuel(true);
        let engine = Engine::new(&config);
        let module = Module::new(&engine, wasm).map_err(|e| {
            Error::InvalidEncoding(format!("{name}: not a WebAssembly module: {e}"))
        })?;
        let host = Host {
            limits: StoreLimitsBuilder::new()
                .memory_size(MAX_MEMORY_BYTES)
                .build(),
            message: String::new(),
        };
        let mut store = Store::new(&engine, host);
        store.limiter(|h| &mut h.limits);
        let budget = fuel.unwrap_or(BASE_FUEL);
        store
            .set_fuel(budget)
            .map_err(|e| wasm_error(name, "fuel", e))?;
        let mut linker = Linker::<Host>::new(&engine);
        let link = |e| wasm_error(name, "linking", e);
        linker
            .func_wrap(
                "runtime",
                "exceptionHandler",
                |mut caller: Caller<'_, Host>, code: i32| -> Result<(), wasmi::Error> {
                    read_message(&mut caller);
                    let m = &caller.data().message;
                    Err(wasmi::Error::new(format!(
                        "{} (code {code}){}{m}",
                        exception(code),
                        if m.is_empty() { "" } else { ": " }
                    )))
                },
            )
            .map_err(link)?
            .func_wrap(
                "runtime",
                "printErrorMessage",
                |mut caller: Caller<'_, Host>| read_message(&mut caller),
            )
            .map_err(link)?
            .func_wrap(
                "runtime",
                "writeBufferMessage",
                |mut caller: Caller<'_, Host>| read_message(&mut caller),
            )
            .map_err(link)?
            .func_wrap("runtime", "showSharedRWMemory", |_: Caller<'_, Host>| {})
            .map_err(link)?;
        let instance = linker
            .instantiate_and_start(&mut store, &module)
            .map_err(|e| match e.as_trap_code() {
                Some(TrapCode::OutOfFuel) => out_of_fuel(name, budget),
                _ => wasm_error(name, "not a circom 2 witness generator", e),
            })?;
        let mut g = WitnessGenerator {
            store,
            instance,
            n32: 0,
            name: name.to_string(),
            fuel,
            budget,
            expected_wires: None,
            curve: Curve::Bls12_381,
        };
        // Checked before anything is read: the host sizes its reads by it.
        let n32 = g.call_i32("getFieldNumLen32", ())?;
        if !(1..=MAX_FIELD_WORDS).contains(&n32) {
            return Err(Error::InvalidInput(format!(
                "{name}: its field elements take {n32} 32-bit words (getFieldNumLen32), \
                 not 1 to {MAX_FIELD_WORDS}: not a circom 2 witness generator"
            )));
        }
        g.n32 = n32 as usize;
        g.call::<(), ()>("getRawPrime", ())?;
        let prime = g.read_shared()?;
        match Curve::from_scalar_modulus_le(&prime).filter(|_| prime.len() == 32) {
            Some(curve) => g.curve = curve,
            None => {
                // At most MAX_FIELD_WORDS words here; bounded again so that
                // a message stays a line.
                let hex: String = prime
                    .iter()
                    .rev()
                    .take(4 * MAX_FIELD_WORDS as usize)
                    .map(|b| format!("{b:02x}"))
                    .collect();
                return Err(Error::InvalidInput(format!(
                    "{name}: a witness generator for another field: its prime is 0x{hex}, \
                     neither BLS12-381's nor BN254's r"
                )));
            }
        }
        Ok(g)
    }

    fn call<P: wasmi::WasmParams, R: wasmi::WasmResults>(
        &mut self,
        f: &str,
        args: P,
    ) -> Result<R, Error> {
        let func = self
            .instance
            .get_typed_func::<P, R>(&self.store, f)
            .map_err(|e| wasm_error(&self.name, &format!("export `{f}`"), e))?;
        func.call(&mut self.store, args)
            .map_err(|e| match e.as_trap_code() {
                Some(TrapCode::OutOfFuel) => out_of_fuel(&self.name, self.budget),
                _ => Error::InvalidInput(format!("{}: {f}: {e}", self.name)),
            })
    }

    /// Makes [`WitnessGenerator::calculate`] refuse a generator that does
    /// not declare `wires` witness values (the constraint system's wire
    /// count), before it runs.
    pub fn expect_wires(&mut self, wires: usize) {
        self.expected_wires = Some(wires);
    }

    /// Fuel the last [`WitnessGenerator::calculate`] used.
    pub fn fuel_used(&self) -> u64 {
        self.budget
            .saturating_sub(self.store.get_fuel().unwrap_or(self.budget))
    }

    fn call_i32<P: wasmi::WasmParams>(&mut self, f: &str, args: P) -> Result<i32, Error> {
        self.call::<P, i32>(f, args)
    }

    /// The field element in the shared memory, little-endian bytes.
    fn read_shared(&mut self) -> Result<Vec<u8>, Error> {
        let mut out = Vec::with_capacity(4 * self.n32);
        for i in 0..self.n32 {
            let w = self.call_i32("readSharedRWMemory", i as i32)?;
            out.extend((w as u32).to_le_bytes());
        }
        Ok(out)
    }

    /// The curve whose scalar field the generator computes in (from its prime).
    pub fn curve(&self) -> Curve {
        self.curve
    }

    fn write_shared<F: ScalarField>(&mut self, x: &F) -> Result<(), Error> {
        let b = x.to_bytes_le();
        for i in 0..self.n32.min(8) {
            let w = u32::from_le_bytes(b[4 * i..4 * i + 4].try_into().unwrap());
            self.call::<(i32, i32), ()>("writeSharedRWMemory", (i as i32, w as i32))?;
        }
        Ok(())
    }

    /// Runs the generator on `input` (snarkjs's input.json: signal names to
    /// numbers, decimal or 0x-hex strings, or nested arrays of them) and
    /// returns the full witness, one value per wire.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an input the circuit does not have, the
    /// wrong number of values, missing inputs, or a failed assert; for a
    /// generator that declares no witness values, more than its memory can
    /// hold (2^27), or other than [`WitnessGenerator::expect_wires`] says,
    /// or that runs out of fuel; [`Error::InvalidEncoding`] for a value
    /// that is not a number.
    pub fn calculate(&mut self, input: &Value) -> Result<Vec<Fr>, Error> {
        self.calculate_as(input)
    }

    /// [`WitnessGenerator::calculate`] in the generator's own field `F`
    /// ([`WitnessGenerator::curve`]'s).
    ///
    /// # Errors
    /// As [`WitnessGenerator::calculate`]; [`Error::WrongCurve`] for `F` of
    /// another curve.
    pub fn calculate_as<F: ScalarField>(&mut self, input: &Value) -> Result<Vec<F>, Error> {
        F::CURVE.expect(self.curve, &self.name)?;
        let obj = input.as_object().ok_or_else(|| {
            Error::InvalidEncoding("input: expected a JSON object of signal names".into())
        })?;
        let declared = self.call_i32("getWitnessSize", ())?;
        // The default budget grows with this count: checked before it is set.
        let wires = usize::try_from(declared)
            .ok()
            .filter(|w| (1..=MAX_WIRES).contains(w))
            .ok_or_else(|| {
                Error::InvalidInput(format!(
                    "{} declares {declared} witness values (getWitnessSize), \
                     not 1 to {MAX_WIRES} (what 4 GiB of memory holds)",
                    self.name
                ))
            })?;
        if let Some(expected) = self.expected_wires.filter(|&e| e != wires) {
            return Err(Error::InvalidInput(format!(
                "{} declares {wires} witness values but the constraint system has \
                 {expected} wires: a generator of another circuit?",
                self.name
            )));
        }
        self.budget = self.fuel.unwrap_or_else(|| default_fuel(wires as u64));
        self.store
            .set_fuel(self.budget)
            .map_err(|e| wasm_error(&self.name, "fuel", e))?;
        self.call::<i32, ()>("init", 1)?;
        let mut set = 0i64;
        for (key, value) in obj {
            let mut values: Vec<F> = Vec::new();
            flatten(value, key, &mut values)?;
            let h = fnv1a(key);
            let (hi, lo) = ((h >> 32) as u32 as i32, h as u32 as i32);
            let size = self.call_i32("getInputSignalSize", (hi, lo))?;
            // Unknown names give a size of 0 (or below, in older generators).
            if size <= 0 {
                return Err(Error::InvalidInput(format!(
                    "input: `{key}` is not an input signal of {}",
                    self.name
                )));
            }
            if values.len() != size as usize {
                return Err(Error::InvalidInput(format!(
                    "input: `{key}` takes {size} values, {} were given",
                    values.len()
                )));
            }
            for (i, x) in values.iter().enumerate() {
                self.write_shared(x)?;
                self.call::<(i32, i32, i32), ()>("setInputSignal", (hi, lo, i as i32))?;
                set += 1;
            }
        }
        let need = self.call_i32("getInputSize", ())?;
        if set < i64::from(need) {
            return Err(Error::InvalidInput(format!(
                "input: {set} values set, {} needs {need}",
                self.name
            )));
        }
        let mut w = Vec::new();
        for i in 0..declared {
            self.call::<i32, ()>("getWitness", i)?;
            let b = self.read_shared()?;
            let b: &[u8; 32] = b[..].try_into().map_err(|_| {
                Error::InvalidInput(format!("{}: witness values are not 32 bytes", self.name))
            })?;
            w.push(F::from_bytes_le(b).map_err(|_| {
                Error::InvalidInput(format!("{}: witness value {i} is not below r", self.name))
            })?);
        }
        Ok(w)
    }
}

/// Native stack of the thread a generator runs on: wasmi overflowed a main
/// thread's 8 MiB on a 176-constraint circuit (circom's generated code
/// nests deeply) and ran in 64 MiB; reserved, not committed.
const GENERATOR_STACK_BYTES: usize = 256 << 20;

/// Loads `wasm` and runs it on `input` on a thread with a large stack:
/// [`WitnessGenerator::new`] then [`WitnessGenerator::calculate`], with
/// `fuel` instructions at most (`None`: [`default_fuel`]). Returns the
/// witness and the fuel it used.
///
/// # Errors
/// As those two; [`Error::Failed`] when the thread cannot be started.
pub fn calculate_witness(
    name: &str,
    wasm: &[u8],
    input: &Value,
    fuel: Option<u64>,
) -> Result<(Vec<Fr>, u64), Error> {
    calculate_witness_expecting(name, wasm, input, fuel, None)
}

/// [`calculate_witness`] in the generator's own field `F` for a caller
/// that knows the constraint system: a generator that does not declare
/// `wires` witness values is refused before it runs
/// ([`WitnessGenerator::expect_wires`]).
///
/// # Errors
/// As [`calculate_witness`]; [`Error::WrongCurve`] for a generator of
/// another prime than `F`'s.
pub fn calculate_witness_expecting<F: ScalarField>(
    name: &str,
    wasm: &[u8],
    input: &Value,
    fuel: Option<u64>,
    wires: Option<usize>,
) -> Result<(Vec<F>, u64), Error> {
    on_a_large_stack(name, || {
        let mut g = WitnessGenerator::with_fuel(name, wasm, fuel)?;
        if let Some(n) = wires {
            g.expect_wires(n);
        }
        let w = g.calculate_as(input)?;
        Ok((w, g.fuel_used()))
    })
}

/// `snarkjs wtns calculate`: the witness of `wasm` on `input` as `.wtns`
/// bytes in the generator's own field (BLS12-381's or BN254's r), with the
/// fuel used, the value count and the curve.
///
/// # Errors
/// As [`calculate_witness`].
pub fn calculate_wtns(
    name: &str,
    wasm: &[u8],
    input: &Value,
    fuel: Option<u64>,
) -> Result<(Vec<u8>, u64, usize, Curve), Error> {
    fn bytes<F: ScalarField>(
        g: &mut WitnessGenerator,
        input: &Value,
    ) -> Result<(Vec<u8>, usize), Error> {
        let w = g.calculate_as::<F>(input)?;
        Ok((crate::wtns::wtns_to_bytes(&w), w.len()))
    }
    on_a_large_stack(name, || {
        let mut g = WitnessGenerator::with_fuel(name, wasm, fuel)?;
        let (b, n) = match g.curve() {
            Curve::Bls12_381 => bytes::<Fr>(&mut g, input)?,
            Curve::Bn254 => bytes::<zkpipe_core::bn254::Fr>(&mut g, input)?,
        };
        Ok((b, g.fuel_used(), n, g.curve()))
    })
}

/// Runs `f` on a thread with [`GENERATOR_STACK_BYTES`] of stack.
fn on_a_large_stack<T: Send>(
    name: &str,
    f: impl FnOnce() -> Result<T, Error> + Send,
) -> Result<T, Error> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("circom-witness".into())
            .stack_size(GENERATOR_STACK_BYTES)
            .spawn_scoped(s, f)
            .map_err(|e| {
                Error::Failed(format!("{name}: cannot start the generator's thread: {e}"))
            })?
            .join()
            .map_err(|_| Error::Failed(format!("{name}: the witness generator panicked")))?
    })
}

/// 64-bit FNV-1a of a signal name (its UTF-16 code units, as circom's JS does).
fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for c in s.encode_utf16() {
        h ^= u64::from(c);
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// Appends `v`'s numbers to `out` (arrays flattened in order), reduced mod r.
fn flatten<F: ScalarField>(v: &Value, key: &str, out: &mut Vec<F>) -> Result<(), Error> {
    let bad = || Error::InvalidEncoding(format!("input: `{key}`: `{v}` is not an integer"));
    match v {
        Value::Array(a) => a.iter().try_for_each(|x| flatten(x, key, out)),
        Value::Number(n) => {
            let x = if let Some(u) = n.as_u64() {
                F::from_u64(u)
            } else if let Some(i) = n.as_i64() {
                F::from_u64(i.unsigned_abs()).neg()
            } else {
                return Err(bad());
            };
            out.push(x);
            Ok(())
        }
        Value::String(s) => {
            out.push(parse_integer(s.trim()).ok_or_else(bad)?);
            Ok(())
        }
        _ => Err(bad()),
    }
}

/// A decimal or `0x` hex integer, maybe negative, reduced mod r.
fn parse_integer<F: ScalarField>(s: &str) -> Option<F> {
    let (neg, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (radix, digits) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => (16, h),
        None => (10, s),
    };
    if digits.is_empty() || digits.len() > 4096 {
        return None;
    }
    let base = F::from_u64(radix);
    let mut acc = F::ZERO;
    for c in digits.chars() {
        acc = acc
            .mul(&base)
            .add(&F::from_u64(u64::from(c.to_digit(radix as u32)?)));
    }
    Some(if neg { acc.neg() } else { acc })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::BLS12_381_R;

    #[test]
    fn fnv_matches_the_reference_values() {
        // FNV-1a 64 test vectors.
        assert_eq!(fnv1a(""), 0xcbf29ce484222325);
        assert_eq!(fnv1a("a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a("foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn integers_parse_like_bigint() {
        assert_eq!(parse_integer("12"), Some(Fr::from_u64(12)));
        assert_eq!(parse_integer("0x1f"), Some(Fr::from_u64(31)));
        assert_eq!(parse_integer("-1"), Some(Fr::one().neg()));
        assert_eq!(parse_integer::<Fr>("1.5"), None);
        assert_eq!(parse_integer::<Fr>(""), None);
        // −1 in BN254's field is its own r − 1.
        let bn = parse_integer::<zkpipe_core::bn254::Fr>("-1").unwrap();
        assert_eq!(bn, zkpipe_core::bn254::Fr::one().neg());
        let mut v: Vec<Fr> = Vec::new();
        assert!(flatten(&serde_json::json!([[1, "2"], [-3]]), "k", &mut v).is_ok());
        assert_eq!(
            v,
            vec![Fr::from_u64(1), Fr::from_u64(2), Fr::from_u64(3).neg()]
        );
        assert!(flatten(&serde_json::json!(1.5), "k", &mut v).is_err());
    }

    /// A module whose `getFieldNumLen32` loops forever.
    fn endless_loop_module() -> Vec<u8> {
        let mut m = b"\0asm\x01\0\0\0".to_vec();
        m.extend([1, 5, 1, 0x60, 0, 1, 0x7f]); // type: () -> i32
        m.extend([3, 2, 1, 0]); // one function of that type
        m.extend([7, 20, 1, 16]);
        m.extend(b"getFieldNumLen32");
        m.extend([0, 0]);
        // loop br 0 end; i32.const 0; end
        m.extend([10, 11, 1, 9, 0, 3, 0x40, 0x0c, 0, 0x0b, 0x41, 0, 0x0b]);
        m
    }

    /// Unsigned LEB128: wasm's counts and sizes.
    fn uleb(mut x: usize, out: &mut Vec<u8>) {
        loop {
            let b = (x & 0x7f) as u8;
            x >>= 7;
            if x == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    /// `i32.const x`.
    fn i32_const(x: i32) -> Vec<u8> {
        let (mut x, mut out) = (i64::from(x), vec![0x41]);
        loop {
            let b = (x & 0x7f) as u8;
            x >>= 7;
            if (x == 0 && b & 0x40 == 0) || (x == -1 && b & 0x40 != 0) {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    fn section(id: u8, items: usize, body: &[u8], m: &mut Vec<u8>) {
        let mut content = Vec::new();
        uleb(items, &mut content);
        content.extend(body);
        m.push(id);
        uleb(content.len(), m);
        m.extend(content);
    }

    /// A module exporting `funcs` (name, type, code) with types 0: `() ->
    /// i32`, 1: `() -> ()`, 2: `(i32) -> i32`; with a page of memory that
    /// starts with `data` unless `data` is empty.
    fn module(funcs: &[(&str, u8, Vec<u8>)], data: &[u8]) -> Vec<u8> {
        let mut m = b"\0asm\x01\0\0\0".to_vec();
        let types = [0x60, 0, 1, 0x7f, 0x60, 0, 0, 0x60, 1, 0x7f, 1, 0x7f];
        section(1, 3, &types, &mut m);
        let kinds: Vec<u8> = funcs.iter().map(|f| f.1).collect();
        section(3, funcs.len(), &kinds, &mut m);
        if !data.is_empty() {
            section(5, 1, &[0, 1], &mut m);
        }
        let mut exports = Vec::new();
        for (i, (name, _, _)) in funcs.iter().enumerate() {
            uleb(name.len(), &mut exports);
            exports.extend(name.as_bytes());
            exports.push(0);
            uleb(i, &mut exports);
        }
        section(7, funcs.len(), &exports, &mut m);
        let mut code = Vec::new();
        for (_, _, body) in funcs {
            uleb(body.len() + 2, &mut code);
            code.push(0); // no locals
            code.extend(body);
            code.push(0x0b);
        }
        section(10, funcs.len(), &code, &mut m);
        if !data.is_empty() {
            let mut segment = vec![0, 0x41, 0, 0x0b]; // memory 0 at offset 0
            uleb(data.len(), &mut segment);
            segment.extend(data);
            section(11, 1, &segment, &mut m);
        }
        m
    }

    /// A generator for BLS12-381 that declares `wires` witness values and
    /// has nothing else (no `init`).
    fn witness_size_module(wires: i32) -> Vec<u8> {
        // readSharedRWMemory(i): the i-th word of memory, where r lies.
        let read = vec![0x20, 0, 0x41, 2, 0x74, 0x28, 2, 0];
        module(
            &[
                ("getFieldNumLen32", 0, i32_const(8)),
                ("getRawPrime", 1, vec![]),
                ("readSharedRWMemory", 2, read),
                ("getWitnessSize", 0, i32_const(wires)),
            ],
            &BLS12_381_R,
        )
    }

    /// A generator whose field elements take `n32` words, and which traps
    /// when the shared memory is read.
    fn field_words_module(n32: i32) -> Vec<u8> {
        module(
            &[
                ("getFieldNumLen32", 0, i32_const(n32)),
                ("getRawPrime", 1, vec![]),
                ("readSharedRWMemory", 2, vec![0]), // unreachable
            ],
            &[],
        )
    }

    fn run(wasm: &[u8]) -> String {
        // On calculate_witness's thread: wasmi needs more stack than a test thread's.
        calculate_witness("g.wasm", wasm, &serde_json::json!({}), None)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_field_element_of_no_or_too_many_words_is_refused_before_reading() {
        for n32 in [-1, 0, 17, 0x1000_0000, 0x7fff_ffff] {
            let e = run(&field_words_module(n32));
            assert!(
                e.contains(&format!(
                    "g.wasm: its field elements take {n32} 32-bit words"
                )),
                "{e}"
            );
        }
        // 8 words pass the check, and the prime is read (here: a trap).
        let e = run(&field_words_module(8));
        assert!(e.contains("readSharedRWMemory"), "{e}");
    }

    #[test]
    fn a_witness_larger_than_memory_can_hold_is_refused() {
        for wires in [-1, 0, (1 << 27) + 1, 0x7fff_ffff] {
            let e = run(&witness_size_module(wires));
            assert!(
                e.contains(&format!("g.wasm declares {wires} witness values")),
                "{e}"
            );
        }
        // The largest size passes, and `init` runs next (here: missing).
        let e = run(&witness_size_module(1 << 27));
        assert!(e.contains("export `init`"), "{e}");
    }

    #[test]
    fn a_witness_size_other_than_the_expected_is_refused() {
        let expecting = |wires| {
            let m = witness_size_module(3);
            calculate_witness_expecting::<Fr>(
                "g.wasm",
                &m,
                &serde_json::json!({}),
                None,
                Some(wires),
            )
            .unwrap_err()
            .to_string()
        };
        let e = expecting(4);
        assert!(
            e.contains("g.wasm declares 3 witness values but the constraint system has 4 wires"),
            "{e}"
        );
        assert!(expecting(3).contains("export `init`"));
    }

    #[test]
    fn an_endless_loop_runs_out_of_fuel() {
        // On calculate_witness's thread: wasmi needs more stack than a test thread's.
        let e = calculate_witness(
            "loop.wasm",
            &endless_loop_module(),
            &serde_json::json!({}),
            Some(50_000),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("ran past its budget of 50000"),
            "{e}"
        );
    }

    #[test]
    fn default_budget_grows_with_the_witness() {
        assert_eq!(default_fuel(0), BASE_FUEL);
        assert!(default_fuel(1 << 20) > default_fuel(1 << 10));
        // The most a generator can declare gets hours, not weeks.
        assert!(default_fuel(MAX_WIRES as u64) < 7_000_000_000_000);
        assert_eq!(default_fuel(u64::MAX), u64::MAX);
    }

    #[test]
    fn garbage_is_not_a_generator() {
        let e = WitnessGenerator::new("x.wasm", b"\0asm garbage").unwrap_err();
        assert!(e.to_string().contains("not a WebAssembly module"), "{e}");
    }
}
