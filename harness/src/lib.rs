//! The harness behind `zkpipe bench`: ops timed per size against the
//! backend they run on, whole proofs timed per stage, and reports that
//! name the machine so their numbers can be quoted.
//!
//! Requests are plain values; the caller parses flags, prints the report
//! (each row as it completes: big sizes take minutes on a CPU) and owns
//! the output format.

mod batch;
mod bn254;
mod in_shape;
mod machine;
mod msm;
mod ops;
mod prove;
mod report;

pub use batch::{
    Setting, compare_lines, compare_settings, proof_line, summary_lines, write_compare,
    write_waterfall,
};
pub use in_shape::{InShapeRequest, in_shape};
pub use machine::{Machine, machine};
pub use msm::{MsmGroup, MsmRequest, msm};
pub use ops::{NttRequest, Sizes, ntt, quotient};
pub use prove::{ProveBench, ProveReport, prove};
pub use report::{Contender, Report, Row, Sink, measure, ms};
