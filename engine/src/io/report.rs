//! Text that several llvm-profdata drop-ins print alike: C's `%g` and LLVM's detailed profile
//! summary.

use std::io::{self, Write};

/// C's `printf("%.*g", precision, v)` for finite values.
pub fn format_g(v: f64, precision: usize) -> String {
    let p = precision.max(1);
    if v == 0.0 {
        return "0".into();
    }
    // The exponent after rounding to `p` significant digits decides the style.
    let sci = format!("{:.*e}", p - 1, v);
    let (mantissa, exp) = sci.split_once('e').expect("Rust's {:e} has an exponent");
    let exp: i32 = exp.parse().expect("Rust's exponent is an integer");
    if exp < -4 || exp >= p as i32 {
        let mantissa = strip_fraction_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip_fraction_zeros(&format!("{v:.decimals$}")).to_string()
    }
}

fn strip_fraction_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// `ProfileSummary::printDetailedSummary`: `entries` are (cutoff in millionths, minimum count,
/// number of counts); the percentage is computed in `float`, as LLVM does.
pub fn print_detailed_summary(
    out: &mut dyn Write,
    entries: impl IntoIterator<Item = (u64, u64, u64)>,
) -> io::Result<()> {
    writeln!(out, "Detailed summary:")?;
    for (cutoff, min_count, num_counts) in entries {
        let percent = (cutoff as f32 / 1_000_000f32 * 100f32) as f64;
        writeln!(
            out,
            "{num_counts} blocks with count >= {min_count} account for {} percentage of the total counts.",
            format_g(percent, 6)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_format_matches_c_g() {
        let f = |c: u64| format_g((c as f32 / 1_000_000f32 * 100f32) as f64, 6);
        assert_eq!(f(10000), "1");
        assert_eq!(f(999000), "99.9");
        assert_eq!(f(999999), "99.9999");
        assert_eq!(format_g(1234567.0, 6), "1.23457e+06");
        assert_eq!(format_g(0.00001234, 6), "1.234e-05");
    }
}
