package sparkcall

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/icereactor/reactor/jobs"
)

// partitionPredicate renders the Spark SQL predicate (not yet quoted as a
// string literal) that selects exactly the rows of partition p: the
// conjunction over the spec's fields of "the transform of the source column
// equals the partition value". Every term is a predicate on the source
// column itself wherever one is exact: identity fields compare the column;
// time transforms (year, month, day, hour) and truncate on integers and
// decimals become half-open ranges (in UTC for time); truncate on strings
// becomes startswith (or equality for a value shorter than the width);
// void fields select everything. Only bucket needs the catalog's Iceberg
// function (<catalog>.system.bucket(n, col) = b), and only where it is the
// one partition field of its column: Iceberg 1.12 mis-projects a
// function predicate onto another partition field of the same column (a
// Spark read of `system.truncate(2, k) = 'na'` on a table partitioned by
// (k, truncate(2, k)) returns no row; interop/README.md). A field whose
// column also has an identity field adds nothing and is left out.
//
// It returns "" when the partition is the whole table (unpartitioned, or
// only void fields).
func partitionPredicate(catalog string, meta table.Metadata, p jobs.Partition) (string, error) {
	current := meta.DefaultPartitionSpec()
	spec := meta.PartitionSpecByID(int(p.SpecID))
	if spec == nil {
		return "", fmt.Errorf("%w: partition %q names spec %d, which the table does not have", ErrNotExpressible, p.Key, p.SpecID)
	}
	if spec.IsUnpartitioned() {
		return "", nil
	}
	if int(p.SpecID) != current {
		// A where predicate selects files by the rows they may hold, so it
		// would also pick the current spec's files of the same rows: not the
		// job's partition.
		return "", fmt.Errorf("%w: partition %q belongs to spec %d, not the current spec %d; a where predicate cannot tell the specs apart",
			ErrNotExpressible, p.Key, p.SpecID, current)
	}
	sc := meta.CurrentSchema()
	parents, err := iceberg.IndexParents(sc)
	if err != nil {
		return "", fmt.Errorf("index schema: %w", err)
	}
	// Non-void fields per source column, and the columns with an identity
	// field.
	fieldsOn, identityOn := map[int]int{}, map[int]bool{}
	for _, f := range spec.Fields() {
		if _, ok := f.Transform.(iceberg.VoidTransform); ok || len(f.SourceIDs) != 1 {
			continue
		}
		fieldsOn[f.SourceIDs[0]]++
		if _, ok := f.Transform.(iceberg.IdentityTransform); ok {
			identityOn[f.SourceIDs[0]] = true
		}
	}
	var terms []string
	for _, f := range spec.Fields() {
		if _, ok := f.Transform.(iceberg.VoidTransform); ok {
			continue
		}
		if _, ok := f.Transform.(iceberg.IdentityTransform); !ok && len(f.SourceIDs) == 1 && identityOn[f.SourceIDs[0]] {
			continue // implied by the identity field's term
		}
		if _, ok := f.Transform.(iceberg.BucketTransform); ok && len(f.SourceIDs) == 1 && fieldsOn[f.SourceIDs[0]] > 1 {
			return "", fmt.Errorf("%w: partition field %q buckets a column another partition field also transforms; "+
				"Iceberg mis-projects the bucket function predicate onto the other field", ErrNotExpressible, f.Name)
		}
		if len(f.SourceIDs) != 1 {
			return "", fmt.Errorf("%w: partition field %q has %d source columns", ErrNotExpressible, f.Name, len(f.SourceIDs))
		}
		src, ok := sc.FindFieldByID(f.SourceIDs[0])
		if !ok {
			return "", fmt.Errorf("%w: partition field %q: source column %d is not in the current schema", ErrNotExpressible, f.Name, f.SourceIDs[0])
		}
		col, err := columnRef(sc, parents, src.ID)
		if err != nil {
			return "", err
		}
		value, present := p.Values[f.FieldID]
		if !present {
			return "", fmt.Errorf("%w: partition %q has no value for field %q", ErrNotExpressible, p.Key, f.Name)
		}
		term, err := fieldPredicate(catalog, col, src.Type, f, value)
		if err != nil {
			return "", fmt.Errorf("partition %q, field %q: %w", p.Key, f.Name, err)
		}
		terms = append(terms, term)
	}
	return strings.Join(terms, " AND "), nil
}

// columnRef quotes the path of a (possibly nested) column: every struct
// level backticked and dot-joined. Columns inside lists or maps cannot be
// partition sources.
func columnRef(sc *iceberg.Schema, parents map[int]int, id int) (string, error) {
	var path []string
	for cur := id; ; {
		f, ok := sc.FindFieldByID(cur)
		if !ok {
			return "", fmt.Errorf("%w: column %d is not in the schema", ErrNotExpressible, cur)
		}
		path = append([]string{f.Name}, path...)
		parent, ok := parents[cur]
		if !ok {
			break
		}
		pf, ok := sc.FindFieldByID(parent)
		if !ok {
			return "", fmt.Errorf("%w: column %d is not in the schema", ErrNotExpressible, parent)
		}
		if _, isStruct := pf.Type.(*iceberg.StructType); !isStruct {
			return "", fmt.Errorf("%w: column %q is inside a %s", ErrNotExpressible, f.Name, pf.Type)
		}
		cur = parent
	}
	return QuoteMultipart(path...)
}

// fieldPredicate renders one partition field's term.
func fieldPredicate(catalog, col string, srcType iceberg.Type, f iceberg.PartitionField, value any) (string, error) {
	if value == nil {
		// Every transform maps null to null and only null to null.
		return col + " IS NULL", nil
	}
	switch t := f.Transform.(type) {
	case iceberg.IdentityTransform:
		lit, err := literal(srcType, value)
		if err != nil {
			return "", err
		}
		return col + " = " + lit, nil
	case iceberg.YearTransform, iceberg.MonthTransform, iceberg.DayTransform, iceberg.HourTransform:
		return timeRange(col, srcType, t, value)
	case iceberg.BucketTransform:
		n, err := intValue(value)
		if err != nil {
			return "", err
		}
		fn, err := systemFunction(catalog, "bucket")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s(%d, %s) = %d", fn, t.NumBuckets, col, n), nil
	case iceberg.TruncateTransform:
		return truncatePredicate(col, srcType, t.Width, value)
	default:
		return "", fmt.Errorf("%w: transform %s has no Spark predicate", ErrNotExpressible, f.Transform)
	}
}

func systemFunction(catalog, name string) (string, error) {
	c, err := QuoteIdent(catalog)
	if err != nil {
		return "", err
	}
	return c + ".system." + name, nil
}

// truncatePredicate renders truncate(width) = value on the column: a
// half-open range [value, value+width) for integers and decimals (width in
// units of the last digit), startswith for a string value of width code
// points, equality for a shorter one (only a string that short truncates to
// itself).
func truncatePredicate(col string, srcType iceberg.Type, width int, value any) (string, error) {
	if width <= 0 {
		return "", fmt.Errorf("%w: truncate width %d", ErrNotExpressible, width)
	}
	switch t := srcType.(type) {
	case iceberg.Int32Type, iceberg.Int64Type:
		n, err := intValue(value)
		if err != nil {
			return "", err
		}
		lo, err := literal(srcType, value)
		if err != nil {
			return "", err
		}
		limit := int64(math.MaxInt64)
		if _, is32 := t.(iceberg.Int32Type); is32 {
			limit = math.MaxInt32
		}
		if n > limit-int64(width) {
			return fmt.Sprintf("%s >= %s", col, lo), nil // the top bucket: no upper bound fits
		}
		upper := any(n + int64(width))
		if _, is32 := t.(iceberg.Int32Type); is32 {
			upper = int32(n + int64(width))
		}
		hi, err := literal(srcType, upper)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s >= %s AND %s < %s", col, lo, col, hi), nil
	case iceberg.DecimalType:
		unscaled, scale, err := decimalValue(value)
		if err != nil {
			return "", err
		}
		if scale != t.Scale() {
			return "", fmt.Errorf("%w: decimal partition value of scale %d for a %s column", ErrNotExpressible, scale, t)
		}
		lo := decimalLiteral(unscaled, t)
		upper := new(big.Int).Add(unscaled, big.NewInt(int64(width)))
		if len(new(big.Int).Abs(upper).String()) > t.Precision() {
			return fmt.Sprintf("%s >= %s", col, lo), nil // beyond the type's range: no upper bound
		}
		return fmt.Sprintf("%s >= %s AND %s < %s", col, lo, col, decimalLiteral(upper, t)), nil
	case iceberg.StringType:
		s, ok := value.(string)
		if !ok {
			return "", fmt.Errorf("%w: partition value %v (%T) for a string column", ErrNotExpressible, value, value)
		}
		lit, err := QuoteString(s)
		if err != nil {
			return "", err
		}
		if utf8.RuneCountInString(s) < width {
			return col + " = " + lit, nil
		}
		return fmt.Sprintf("startswith(%s, %s)", col, lit), nil
	}
	return "", fmt.Errorf("%w: truncate of a %s column", ErrNotExpressible, srcType)
}

// decimalValue reads a decimal partition value as its unscaled integer and
// scale.
func decimalValue(v any) (*big.Int, int, error) {
	switch d := v.(type) {
	case iceberg.DecimalLiteral:
		return d.Val.BigInt(), d.Scale, nil
	case iceberg.Decimal:
		return d.Val.BigInt(), d.Scale, nil
	}
	return nil, 0, fmt.Errorf("%w: partition value %v (%T) is not a decimal", ErrNotExpressible, v, v)
}

// decimalLiteral renders unscaled*10^-scale as CAST('...' AS DECIMAL(p,s)).
func decimalLiteral(unscaled *big.Int, t iceberg.DecimalType) string {
	digits := new(big.Int).Abs(unscaled).String()
	sign := ""
	if unscaled.Sign() < 0 {
		sign = "-"
	}
	if s := t.Scale(); s > 0 {
		if len(digits) <= s {
			digits = strings.Repeat("0", s-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-s] + "." + digits[len(digits)-s:]
	}
	return fmt.Sprintf("CAST(%s AS DECIMAL(%d,%d))", mustQuoteString(sign+digits), t.Precision(), t.Scale())
}

// timeRange renders a year/month/day/hour partition as a half-open range on
// the source column, in UTC (Iceberg computes these transforms in UTC).
func timeRange(col string, srcType iceberg.Type, tr iceberg.Transform, value any) (string, error) {
	n, err := intValue(value)
	if err != nil {
		return "", err
	}
	epoch := time.Unix(0, 0).UTC()
	var start, end time.Time
	switch tr.(type) {
	case iceberg.YearTransform:
		start = epoch.AddDate(int(n), 0, 0)
		end = start.AddDate(1, 0, 0)
	case iceberg.MonthTransform:
		start = epoch.AddDate(0, int(n), 0)
		end = start.AddDate(0, 1, 0)
	case iceberg.DayTransform:
		start = epoch.AddDate(0, 0, int(n))
		end = start.AddDate(0, 0, 1)
	case iceberg.HourTransform:
		if _, isDate := srcType.(iceberg.DateType); isDate {
			return "", fmt.Errorf("%w: hour transform on a date column", ErrNotExpressible)
		}
		start = epoch.Add(time.Duration(n) * time.Hour)
		end = start.Add(time.Hour)
	}
	lo, err := timeLiteral(srcType, start)
	if err != nil {
		return "", err
	}
	hi, err := timeLiteral(srcType, end)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s >= %s AND %s < %s", col, lo, col, hi), nil
}

// timeLiteral renders t as a literal of the column's type: DATE for date,
// TIMESTAMP with an explicit UTC offset for timestamptz (independent of the
// session time zone), TIMESTAMP_NTZ for timestamp without zone.
func timeLiteral(srcType iceberg.Type, t time.Time) (string, error) {
	if y := t.Year(); y < 1 || y > 9999 {
		return "", fmt.Errorf("%w: %s is outside the years Spark literals cover", ErrNotExpressible, t.Format(time.RFC3339))
	}
	switch srcType.(type) {
	case iceberg.DateType:
		return "DATE " + mustQuoteString(t.Format("2006-01-02")), nil
	case iceberg.TimestampTzType:
		return "TIMESTAMP " + mustQuoteString(t.Format("2006-01-02 15:04:05.000000")+"Z"), nil
	case iceberg.TimestampType:
		return "TIMESTAMP_NTZ " + mustQuoteString(t.Format("2006-01-02 15:04:05.000000")), nil
	default:
		return "", fmt.Errorf("%w: a time transform on a %s column", ErrNotExpressible, srcType)
	}
}

// intValue reads an integer partition value (bucket number, year/month/
// hour offset, day as iceberg.Date).
func intValue(v any) (int64, error) {
	switch n := v.(type) {
	case int32:
		return int64(n), nil
	case int64:
		return n, nil
	case int:
		return int64(n), nil
	case iceberg.Date:
		return int64(n), nil
	}
	return 0, fmt.Errorf("%w: partition value %v (%T) is not an integer", ErrNotExpressible, v, v)
}

// literal renders a partition value as a Spark literal of exactly the
// column's Spark type, so the comparison needs no cast on the column side
// (which Iceberg's filter conversion could not push down).
func literal(t iceberg.Type, v any) (string, error) {
	bad := func() (string, error) {
		return "", fmt.Errorf("%w: partition value %v (%T) for a %s column", ErrNotExpressible, v, v, t)
	}
	switch t := t.(type) {
	case iceberg.BooleanType:
		b, ok := v.(bool)
		if !ok {
			return bad()
		}
		return strconv.FormatBool(b), nil
	case iceberg.Int32Type:
		n, err := intValue(v)
		if err != nil || n < math.MinInt32 || n > math.MaxInt32 {
			return bad()
		}
		if n == math.MinInt32 {
			// 2147483648 alone is not an INT literal.
			return "CAST('-2147483648' AS INT)", nil
		}
		return strconv.FormatInt(n, 10), nil
	case iceberg.Int64Type:
		n, err := intValue(v)
		if err != nil {
			return bad()
		}
		if n == math.MinInt64 {
			return "CAST('-9223372036854775808' AS BIGINT)", nil
		}
		return strconv.FormatInt(n, 10) + "L", nil
	case iceberg.Float32Type, iceberg.Float64Type:
		var (
			f    float64
			bits = 64
			name = "DOUBLE"
		)
		switch x := v.(type) {
		case float32:
			f, bits = float64(x), 32
		case float64:
			f = x
		default:
			return bad()
		}
		if _, is32 := t.(iceberg.Float32Type); is32 {
			bits, name = 32, "FLOAT"
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "", fmt.Errorf("%w: partition value %v: NaN and infinities have no exact equality predicate", ErrNotExpressible, f)
		}
		return fmt.Sprintf("CAST(%s AS %s)", mustQuoteString(strconv.FormatFloat(f, 'g', -1, bits)), name), nil
	case iceberg.DecimalType:
		unscaled, scale, err := decimalValue(v)
		if err != nil || scale != t.Scale() {
			return bad()
		}
		return decimalLiteral(unscaled, t), nil
	case iceberg.StringType:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		return QuoteString(s)
	case iceberg.UUIDType:
		// Iceberg's Spark runtime reads uuid columns as strings.
		switch u := v.(type) {
		case uuid.UUID:
			return mustQuoteString(u.String()), nil
		case [16]byte:
			return mustQuoteString(uuid.UUID(u).String()), nil
		case string:
			if _, err := uuid.Parse(u); err != nil {
				return bad()
			}
			return QuoteString(u)
		}
		return bad()
	case iceberg.BinaryType, iceberg.FixedType:
		b, ok := v.([]byte)
		if !ok {
			return bad()
		}
		return "X'" + strings.ToUpper(hex.EncodeToString(b)) + "'", nil
	case iceberg.DateType:
		n, err := intValue(v)
		if err != nil {
			return bad()
		}
		return timeLiteral(t, time.Unix(0, 0).UTC().AddDate(0, 0, int(n)))
	case iceberg.TimestampType, iceberg.TimestampTzType:
		var us int64
		switch x := v.(type) {
		case iceberg.Timestamp:
			us = int64(x)
		case int64:
			us = x
		default:
			return bad()
		}
		return timeLiteral(t, time.UnixMicro(us).UTC())
	}
	return "", fmt.Errorf("%w: Spark has no literal for a %s partition value", ErrNotExpressible, t)
}
