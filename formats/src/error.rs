//! What the format errors share: [`Cause`], the underlying error (io, zstd, zlib, …) an error
//! was built from, kept so that `std::error::Error::source` can hand it out.

use std::fmt;
use std::sync::Arc;

/// The underlying error of a format error. Cheap to clone; two causes compare equal when
/// their messages do, so that format errors can stay `Clone + PartialEq`.
#[derive(Clone)]
pub struct Cause(Arc<dyn std::error::Error + Send + Sync>);

impl Cause {
    /// Wraps `e`.
    pub fn new(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        Cause(Arc::new(e))
    }

    /// The wrapped error, for `source()`.
    pub fn error(&self) -> &(dyn std::error::Error + 'static) {
        &*self.0
    }
}

impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for Cause {}

impl From<std::io::Error> for Cause {
    fn from(e: std::io::Error) -> Self {
        Cause::new(e)
    }
}
