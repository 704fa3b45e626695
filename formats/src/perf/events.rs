//! Mapping records to the event (attr) that produced them, so each SAMPLE is decoded with the
//! right layout.

use std::collections::HashMap;

use super::attr::EventAttr;
use super::error::ErrorKind;
use super::header::AttrEntry;
use super::sample::SampleLayout;
use crate::bytes::Bytes;

/// The events of one capture, each with its precomputed [`SampleLayout`], indexed by sample id.
#[derive(Clone, Debug, Default)]
pub struct EventSet {
    /// The events, in attr-section (or HEADER_ATTR) order.
    pub attrs: Vec<AttrEntry>,
    /// `layouts[i]` is the sample layout of `attrs[i]`.
    pub layouts: Vec<SampleLayout>,
    by_id: HashMap<u64, usize>,
}

impl EventSet {
    /// Builds the set; several events must agree on where their id sits, as perf requires
    /// (`evlist__valid_sample_type`).
    pub fn new(attrs: Vec<AttrEntry>) -> Result<EventSet, ErrorKind> {
        let mut set = EventSet::default();
        for entry in attrs {
            set.push(entry)?;
        }
        Ok(set)
    }

    /// Adds one event (pipe mode delivers them one HEADER_ATTR at a time).
    pub fn push(&mut self, entry: AttrEntry) -> Result<(), ErrorKind> {
        let layout = SampleLayout::new(&entry.attr);
        if let Some(first) = self.layouts.first() {
            if first.sample_id_offset.is_none()
                || first.sample_id_offset != layout.sample_id_offset
                || first.trailer_id_from_end != layout.trailer_id_from_end
            {
                return Err(ErrorKind::AmbiguousEvents);
            }
        }
        let index = self.attrs.len();
        for &id in &entry.ids {
            self.by_id.insert(id, index);
        }
        self.attrs.push(entry);
        self.layouts.push(layout);
        Ok(())
    }

    /// Whether no event has been added.
    pub fn is_empty(&self) -> bool {
        self.attrs.is_empty()
    }

    /// The first event's attr (perf decodes `sample_id_all` trailers with it before an id is known).
    pub fn first_attr(&self) -> Option<&EventAttr> {
        self.attrs.first().map(|a| &a.attr)
    }

    /// Index of the event that wrote a SAMPLE with this body.
    #[inline]
    /// Fails with [`ErrorKind::SampleBeforeAttr`] when no event is known yet.
    pub fn sample_event(&self, body: Bytes<'_>) -> Result<usize, ErrorKind> {
        match self.attrs.len() {
            0 => return Err(ErrorKind::SampleBeforeAttr),
            1 => return Ok(0),
            _ => {}
        }
        let pos = self.layouts[0]
            .sample_id_offset
            .ok_or(ErrorKind::AmbiguousEvents)?;
        let id = body.u64(pos).ok_or(ErrorKind::SampleTooShort {
            field: "IDENTIFIER",
            record_size: body.len() + 8,
        })?;
        self.by_id
            .get(&id)
            .copied()
            .ok_or(ErrorKind::UnknownEventId(id))
    }

    /// Index of the event that wrote a non-sample record, from its `sample_id_all` trailer.
    /// Falls back to the first event, whose trailer layout all events share.
    pub fn other_event(&self, body: Bytes<'_>) -> usize {
        if self.attrs.len() <= 1 {
            return 0;
        }
        let Some(from_end) = self.layouts[0].trailer_id_from_end else {
            return 0;
        };
        body.len()
            .checked_sub(from_end)
            .and_then(|pos| body.u64(pos))
            .and_then(|id| self.by_id.get(&id).copied())
            .unwrap_or(0)
    }
}
