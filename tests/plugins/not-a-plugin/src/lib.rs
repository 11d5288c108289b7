//! A valid shared library that is not a zkpipe plugin (no root module).

/// Something to export, so the library is not empty.
#[unsafe(no_mangle)]
pub extern "C" fn zkpipe_fixture_answer() -> u32 {
    42
}
