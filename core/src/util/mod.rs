//! Helpers that the layers above share: zkpipe's cache folder, files from
//! and for strangers, field elements as decimals, what this machine has,
//! progress reports, randomness from the system and seeded samples.

pub mod cache;
pub mod decimal;
pub mod fsutil;
pub mod machine;
pub mod progress;
pub mod random;
pub mod sample;
