//! Linux `perf.data`: file mode and pipe mode, both byte orders, any `perf_event_attr` size,
//! zstd-compressed record streams. Layouts: `../shared/notes/perf-data.md`.

pub mod attr;
pub mod error;
pub mod events;
pub mod header;
pub mod record;
pub mod sample;
pub mod script;
pub mod stream;

pub use attr::EventAttr;
pub use error::{Error, ErrorKind, Offset, Result};
pub use events::EventSet;
pub use header::{AttrEntry, BuildIdEntry, Features, FileHeader, Mode};
pub use record::{kind, Comm, Mmap, RecordHeader, Task};
pub use sample::{BranchEntry, BranchFlags, BranchStack, Sample, SampleLayout};
pub use stream::{next_record, Next, RecordRef, Records, ZstdStream};
