//! The schema of a Parquet footer (`FileMetaData`, Apache `parquet-format`'s `parquet.thrift`)
//! and of its page headers (`PageHeader`) as the `parquet` crate (57) decodes them: the fields it reads, with the types it reads them
//! as. Fields it skips (`ColumnMetaData.path_in_schema` and `key_value_metadata`,
//! `RowGroup.total_compressed_size`, the encryption fields, which our build leaves out) are
//! left out, so they are skipped by their declared type here too.

use super::{Field, Shape};

const fn f(id: i16, shape: Shape) -> Field {
    Field { id, shape }
}

/// A struct whose fields are all unknown (the empty structs of unions).
const ANY: Shape = Shape::Struct(&[]);

const TIME_UNIT: &[Field] = &[f(1, ANY), f(2, ANY), f(3, ANY)];

const DECIMAL: &[Field] = &[f(1, Shape::I32), f(2, Shape::I32)];

const TIMESTAMP: &[Field] = &[f(1, Shape::Bool), f(2, Shape::Struct(TIME_UNIT))];

const INT_TYPE: &[Field] = &[f(1, Shape::Byte), f(2, Shape::Bool)];

const LOGICAL_TYPE: &[Field] = &[
    f(1, ANY),
    f(2, ANY),
    f(3, ANY),
    f(4, ANY),
    f(5, Shape::Struct(DECIMAL)),
    f(6, ANY),
    f(7, Shape::Struct(TIMESTAMP)),
    f(8, Shape::Struct(TIMESTAMP)),
    f(10, Shape::Struct(INT_TYPE)),
    f(11, ANY),
    f(12, ANY),
    f(13, ANY),
    f(14, ANY),
    f(15, ANY),
    f(16, Shape::Struct(&[f(1, Shape::Byte)])),
    f(17, Shape::Struct(&[f(1, Shape::Binary)])),
    f(18, Shape::Struct(&[f(1, Shape::Binary), f(2, Shape::I32)])),
];

const SCHEMA_ELEMENT: &[Field] = &[
    f(1, Shape::I32),
    f(2, Shape::I32),
    f(3, Shape::I32),
    f(4, Shape::Binary),
    f(5, Shape::I32),
    f(6, Shape::I32),
    f(7, Shape::I32),
    f(8, Shape::I32),
    f(9, Shape::I32),
    f(10, Shape::Struct(LOGICAL_TYPE)),
];

const STATISTICS: &[Field] = &[
    f(1, Shape::Binary),
    f(2, Shape::Binary),
    f(3, Shape::I64),
    f(4, Shape::I64),
    f(5, Shape::Binary),
    f(6, Shape::Binary),
    f(7, Shape::Bool),
    f(8, Shape::Bool),
];

const PAGE_ENCODING_STATS: &[Field] = &[f(1, Shape::I32), f(2, Shape::I32), f(3, Shape::I32)];

const SIZE_STATISTICS: &[Field] = &[
    f(1, Shape::I64),
    f(2, Shape::List(&Shape::I64)),
    f(3, Shape::List(&Shape::I64)),
];

const BOUNDING_BOX: &[Field] = &[
    f(1, Shape::Double),
    f(2, Shape::Double),
    f(3, Shape::Double),
    f(4, Shape::Double),
    f(5, Shape::Double),
    f(6, Shape::Double),
    f(7, Shape::Double),
    f(8, Shape::Double),
];

const GEOSPATIAL_STATISTICS: &[Field] = &[
    f(1, Shape::Struct(BOUNDING_BOX)),
    f(2, Shape::List(&Shape::I32)),
];

const COLUMN_META_DATA: &[Field] = &[
    f(1, Shape::I32),
    f(2, Shape::List(&Shape::I32)),
    f(4, Shape::I32),
    f(5, Shape::I64),
    f(6, Shape::I64),
    f(7, Shape::I64),
    f(9, Shape::I64),
    f(10, Shape::I64),
    f(11, Shape::I64),
    f(12, Shape::Struct(STATISTICS)),
    f(13, Shape::List(&Shape::Struct(PAGE_ENCODING_STATS))),
    f(14, Shape::I64),
    f(15, Shape::I32),
    f(16, Shape::Struct(SIZE_STATISTICS)),
    f(17, Shape::Struct(GEOSPATIAL_STATISTICS)),
];

const COLUMN_CHUNK: &[Field] = &[
    f(1, Shape::Binary),
    f(2, Shape::I64),
    f(3, Shape::Struct(COLUMN_META_DATA)),
    f(4, Shape::I64),
    f(5, Shape::I32),
    f(6, Shape::I64),
    f(7, Shape::I32),
];

const SORTING_COLUMN: &[Field] = &[f(1, Shape::I32), f(2, Shape::Bool), f(3, Shape::Bool)];

const ROW_GROUP: &[Field] = &[
    f(1, Shape::List(&Shape::Struct(COLUMN_CHUNK))),
    f(2, Shape::I64),
    f(3, Shape::I64),
    f(4, Shape::List(&Shape::Struct(SORTING_COLUMN))),
    f(5, Shape::I64),
    f(7, Shape::I16),
];

const KEY_VALUE: &[Field] = &[f(1, Shape::Binary), f(2, Shape::Binary)];

const COLUMN_ORDER: &[Field] = &[f(1, ANY)];

/// `FileMetaData`, the footer.
pub const FILE_META_DATA: &[Field] = &[
    f(1, Shape::I32),
    f(2, Shape::List(&Shape::Struct(SCHEMA_ELEMENT))),
    f(3, Shape::I64),
    f(4, Shape::List(&Shape::Struct(ROW_GROUP))),
    f(5, Shape::List(&Shape::Struct(KEY_VALUE))),
    f(6, Shape::Binary),
    f(7, Shape::List(&Shape::Struct(COLUMN_ORDER))),
];

const DATA_PAGE_HEADER: &[Field] = &[
    f(1, Shape::I32),
    f(2, Shape::I32),
    f(3, Shape::I32),
    f(4, Shape::I32),
];

const DICTIONARY_PAGE_HEADER: &[Field] = &[f(1, Shape::I32), f(2, Shape::I32), f(3, Shape::Bool)];

const DATA_PAGE_HEADER_V2: &[Field] = &[
    f(1, Shape::I32),
    f(2, Shape::I32),
    f(3, Shape::I32),
    f(4, Shape::I32),
    f(5, Shape::I32),
    f(6, Shape::I32),
    f(7, Shape::Bool),
];

/// `PageHeader`, before each page of a column chunk, as the crate reads it (without the pages'
/// statistics, which it skips by their declared type).
pub const PAGE_HEADER: &[Field] = &[
    f(1, Shape::I32),
    f(2, Shape::I32),
    f(3, Shape::I32),
    f(4, Shape::I32),
    f(5, Shape::Struct(DATA_PAGE_HEADER)),
    f(6, ANY),
    f(7, Shape::Struct(DICTIONARY_PAGE_HEADER)),
    f(8, Shape::Struct(DATA_PAGE_HEADER_V2)),
];

/// `PageHeader.compressed_page_size`: the bytes of the page after its header.
pub const COMPRESSED_PAGE_SIZE: i16 = 3;

/// The most structs (schema elements, row groups, column chunks, …) a footer's lists may
/// hold in all. The crate keeps each at a few hundred bytes, so this bounds its memory to
/// about a gigabyte; profmill's own files hold a handful per row group.
pub const MAX_FOOTER_STRUCTS: u64 = 1 << 22;
