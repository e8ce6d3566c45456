// Package sortorder owns reactor's sort orders: parsing Spark's sort_order
// syntax (the argument of rewrite_data_files(strategy => 'sort', sort_order
// => '...')), converting a table's Iceberg sort order, validating an order
// against a table schema, and applying it to Arrow record batches — a
// linear (lexicographic) sort or a z-order.
//
// It must not touch catalogs, files or the planner: callers read the rows,
// bound the batch size, and write and commit the result. Everything here is
// a pure function of its arguments; a Bound is immutable and safe for
// concurrent use.
//
// # Syntax
//
// Parse accepts what Spark accepts for plain columns:
//
//	customer_id ASC NULLS LAST, order_ts DESC
//	`weird col` desc nulls first
//	zorder(c1, c2[, c3, c4])
//
// Keywords are case-insensitive. A bare column name is [A-Za-z0-9_]+; any
// other name is written in backticks, a literal backtick doubled. The null
// order defaults by direction as in Spark and Iceberg: ASC is NULLS FIRST,
// DESC is NULLS LAST. Dotted names (nested fields) and transforms
// (bucket, truncate, years, ...) are refused with an error saying so; a
// z-order takes 2 to 4 columns and no directions. Column names resolve
// against the table schema's top-level columns exactly, else
// case-insensitively when that is unambiguous (Spark's default,
// spark.sql.caseSensitive=false).
//
// # Linear sort
//
// Sort builds one byte string per row whose bytes.Compare order is the sort
// order, and sorts row indices by it, breaking ties by row index so the
// sort is stable. Each field contributes a null marker byte (0x00 for a null
// with NULLS FIRST, 0x02 for a null with NULLS LAST, 0x01 for a value — the
// marker is never inverted, so the null order does not depend on the
// direction) followed by the value's order-preserving encoding, with every
// byte inverted (XOR 0xFF) for DESC. A null in a fixed-width field is padded
// with zeros so all nulls compare equal and the next field starts at the
// same offset.
//
// Inverting reverses the order of fixed-width encodings, and of
// variable-length ones because those are prefix-free: 0x00 is escaped as
// 0x00 0xFF and the value ends with 0x00 0x00, so "a" < "a\x00" < "ab"
// ascending and the reverse descending.
//
// Linear encodings (bytes per value after the marker):
//
//	boolean                  1   false 0x00, true 0x01
//	int, date                4   big-endian int32 with the sign bit flipped
//	long, time, timestamp,   8   big-endian int64 with the sign bit flipped
//	timestamptz, timestamp_ns, timestamptz_ns   (µs or ns since the epoch/midnight)
//	float                    4   IEEE total order: negative -> all bits
//	double                   8     inverted, positive -> sign bit set;
//	                             every NaN -> all ones (after +Inf)
//	decimal(p, s)           16   unscaled int128, big-endian, sign bit flipped
//	fixed[L]                 L   the bytes as they are (all values have length L)
//	uuid                    16   the 16 bytes as they are
//	string, binary           var escaped bytes (0x00 -> 0x00 0xFF) + 0x00 0x00
//
// Floats follow Iceberg's comparator (Java's Float.compare): -0.0 sorts
// before +0.0, and NaN is larger than +Inf; all NaNs (whatever their sign
// or payload) compare equal to each other. Spark's SQL ordering differs in
// one point: it treats -0.0 and +0.0 as equal. Strings compare as UTF-8
// bytes, which is code point order, as in Spark and Iceberg. fixed and uuid
// need no escaping: equal-length encodings are already prefix-free.
//
// # Z-order
//
// A z-order of n columns (2..4) is built in three steps.
//
// 1. Normalise: each value maps to an order-preserving unsigned 64-bit
// number (a < b implies norm(a) <= norm(b)):
//
//	null                     0 (nulls come first)
//	boolean                  false 0, true 1<<63
//	int, date                widened to int64, then as long
//	long, time, timestamp*   uint64(v) XOR 1<<63 (sign bit flipped)
//	float                    widened to double (exact), then as double
//	double                   IEEE total order as above (-0.0 < +0.0);
//	                         every NaN -> 0xFFFFFFFFFFFFFFFF (last)
//	decimal                  the unscaled value clamped to [MinInt64,
//	                         MaxInt64], then as long
//	string, binary,          the first 8 bytes, big-endian, zero-padded
//	fixed, uuid              on the right ("a" and "a\x00" tie)
//
// 2. Scale (Sort only): within the batch being sorted, each column's
// normalised value v becomes its quantile floor(2^64 * k / rows), k the
// number of the batch's rows whose value is smaller than v. This is
// monotone too (equal values stay equal, nulls stay first, NaN last), and
// it makes every column use all 64 bits. Without it, the interleaving
// below lets whichever column varies in the highest bits decide alone: a
// long in [0, 10000) varies only in its low 14 bits, while a double's
// exponent, or a day of microsecond timestamps, varies 20 or more bits
// higher, so the long would never matter except as a tie-break and files
// would not prune on it. (Iceberg's Spark z-order interleaves the raw
// normalised values and has exactly that weakness; Delta's OPTIMIZE
// ZORDER BY interleaves range ids, which is what the quantile is.)
//
// 3. Interleave the bits most significant first — bit 63 of column 0, bit
// 63 of column 1, ..., bit 63 of column n-1, bit 62 of column 0, ... — into
// an 8n-byte key, and sort rows by that key (stably). Ties keep their input
// order.
//
// Because of step 2, a z-order key depends on the batch: Compare and
// AppendKey, which see single rows, use steps 1 and 3 only. They order
// values on the raw z-curve, which is batch-independent but is not the
// order Sort produced, so they cannot check that a z-ordered file is
// "sorted"; for linear orders they can.
//
// Decimals are clamped rather than truncated to their top 64 bits because
// the top bits of a typical decimal(10, 2) are all equal; clamping keeps
// every value that fits in a long exact and only merges values beyond
// ±9.2e18 unscaled. The boolean's value sits in the top bit, as in
// Iceberg's ZOrderByteUtils.
//
// # Arrow types
//
// Columns of a batch are found by Iceberg field id (Arrow field metadata
// PARQUET:field_id) when the batch schema carries ids, else by name. Each
// Iceberg type accepts the Arrow types iceberg-go produces for it, plus the
// narrower ones a promoted column can still hold: int accepts int8, int16,
// int32, uint8 and uint16; long also int64 and uint32; double also float32;
// decimal accepts decimal32/64/128 with the schema's scale; string accepts
// string, large_string and string_view; binary accepts binary,
// large_binary, binary_view and fixed_size_binary; fixed[L] needs
// fixed_size_binary(L); uuid the arrow.uuid extension or
// fixed_size_binary(16); time needs time64[us]; timestamp and timestamptz
// need timestamp[us] and the _ns types timestamp[ns] (with or without a
// time zone). Other Arrow types, including dictionary-encoded columns, are
// an error from Sort rather than a silent conversion, so keys stay
// comparable across batches.
//
// # Files
//
//   - parse.go: [Order] and [Parse] (the syntax above); table.go:
//     [FromTable], a table's Iceberg sort order as an Order.
//   - bind.go: [Bound], an order checked against a table schema (the
//     column types it accepts).
//   - encode.go: reading bound columns from Arrow batches and the key
//     encodings above.
//   - sort.go: the linear sort and the z-order (keys in one arena).
//   - runs.go: sorting in runs whose keys merge afterwards, for the
//     executor's external sort of groups larger than memory.
package sortorder
