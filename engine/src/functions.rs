//! Function boundaries as BOLT sees them well enough to tell which function an address is in:
//! function symbols (and PLT entries), each extending to the next function or its section's
//! end (BOLT's "max size" rule, so padding belongs to the function before it).

use object::{Object, ObjectSection, ObjectSymbol, SectionKind, SymbolKind};

use crate::error::{Error, Result};

#[derive(Clone, Debug, Default)]
pub struct FunctionMap {
    /// Sorted, distinct start addresses and the end of each function's range.
    ranges: Vec<(u64, u64)>,
}

/// Size of one PLT entry on x86-64.
const PLT_ENTRY: u64 = 16;

impl FunctionMap {
    pub fn from_elf(path: &std::path::Path, data: &[u8]) -> Result<FunctionMap> {
        let file = object::File::parse(data).map_err(|e| Error::Binary {
            path: path.to_path_buf(),
            message: format!("not an ELF file: {e}"),
        })?;
        let sections: Vec<(u64, u64, bool)> = file
            .sections()
            .filter(|s| s.kind() == SectionKind::Text)
            .map(|s| {
                (
                    s.address(),
                    s.address() + s.size(),
                    is_plt(s.name().unwrap_or("")),
                )
            })
            .collect();
        let mut starts: Vec<u64> = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
            .map(|s| s.address())
            .collect();
        for &(start, end, plt) in &sections {
            if plt {
                starts.extend((start..end).step_by(PLT_ENTRY as usize));
            }
        }
        if starts.is_empty() {
            return Err(Error::Binary {
                path: path.to_path_buf(),
                message: "no function symbols (stripped binary?)".into(),
            });
        }
        starts.sort_unstable();
        starts.dedup();
        let ranges = starts
            .iter()
            .enumerate()
            .filter_map(|(i, &start)| {
                let section_end = sections
                    .iter()
                    .find(|&&(s, e, _)| start >= s && start < e)?
                    .1;
                let next = starts.get(i + 1).copied().unwrap_or(u64::MAX);
                Some((start, next.min(section_end)))
            })
            .collect();
        Ok(FunctionMap { ranges })
    }

    /// The start of the function containing `addr`.
    pub fn containing(&self, addr: u64) -> Option<u64> {
        let i = self
            .ranges
            .partition_point(|&(start, _)| start <= addr)
            .checked_sub(1)?;
        let (start, end) = self.ranges[i];
        (addr < end).then_some(start)
    }
}

fn is_plt(name: &str) -> bool {
    matches!(name, ".plt" | ".plt.sec" | ".plt.got")
}
