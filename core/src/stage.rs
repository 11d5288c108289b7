//! The stages of one partition's proof: the names of stage times, timeline
//! spans, the waterfall's bars and `TIMELINE` lines.

use serde::Serialize;

/// One stage of a partition's proof, in pipeline order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Witness-only synthesis of the circuit.
    Witness,
    /// `a, b, c = A·w, B·w, C·w`.
    Spmv,
    /// `h = (a·b − c)/Z` through NTTs on a coset.
    Quotient,
    /// The G1 MSMs: A, B in G1, L, H.
    Msm,
    /// B in G2.
    MsmG2,
    /// Adding the `r, s` blinding terms.
    Assemble,
    /// Freeing the partition's memory.
    Dealloc,
}

impl Stage {
    /// All stages, in pipeline order.
    pub const ALL: [Stage; 7] = [
        Stage::Witness,
        Stage::Spmv,
        Stage::Quotient,
        Stage::Msm,
        Stage::MsmG2,
        Stage::Assemble,
        Stage::Dealloc,
    ];

    /// The stage's name, as the waterfall and `TIMELINE` lines print it.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Witness => "witness",
            Stage::Spmv => "spmv",
            Stage::Quotient => "quotient",
            Stage::Msm => "msm",
            Stage::MsmG2 => "msm_g2",
            Stage::Assemble => "assemble",
            Stage::Dealloc => "dealloc",
        }
    }

    /// The stage [`Stage::name`] names.
    pub fn from_name(name: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.name() == name)
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::Stage;

    #[test]
    fn serialized_names_are_the_printed_names() {
        for s in Stage::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), s.name());
            assert_eq!(Stage::from_name(s.name()), Some(s));
        }
        assert_eq!(Stage::from_name("MSM"), None);
    }
}
