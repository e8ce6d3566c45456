package sparkcall

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

// sparkUnescape parses one Spark SQL string literal the way Spark's lexer
// and unescapeSQLString do with escapedStringLiterals=false (for the escapes
// QuoteString emits, plus Spark's ” escape), returning the value and what
// follows the literal.
func sparkUnescape(t *testing.T, s string) (string, string) {
	t.Helper()
	if !strings.HasPrefix(s, "'") {
		t.Fatalf("not a string literal: %s", s)
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' && i+1 < len(s) && s[i+1] == '\'':
			b.WriteByte('\'')
			i++
		case c == '\'':
			return b.String(), s[i+1:]
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'u':
				var r rune
				for _, h := range s[i+1 : i+5] {
					r = r*16 + rune(strings.IndexRune("0123456789abcdef", h|0x20))
				}
				b.WriteRune(r)
				i += 4
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	t.Fatalf("unterminated string literal: %s", s)
	return "", ""
}

// sparkIdentParts splits a backtick-quoted multipart identifier back into
// its parts, as Spark's parseMultipartIdentifier does.
func sparkIdentParts(t *testing.T, s string) []string {
	t.Helper()
	var parts []string
	for len(s) > 0 {
		if s[0] != '`' {
			t.Fatalf("part not quoted: %s", s)
		}
		var b strings.Builder
		i := 1
		for ; i < len(s); i++ {
			if s[i] == '`' {
				if i+1 < len(s) && s[i+1] == '`' {
					b.WriteByte('`')
					i++
					continue
				}
				break
			}
			b.WriteByte(s[i])
		}
		parts = append(parts, b.String())
		s = s[i+1:]
		if len(s) > 0 {
			if s[0] != '.' {
				t.Fatalf("parts not dot-joined: %s", s)
			}
			s = s[1:]
		}
	}
	return parts
}

var tricky = []string{
	"plain", "it's", `back\slash`, `\'`, `'\''`, "a`b", "``", "dots.in.name", "naïve ünïcödé 日本",
	"tab\tnew\nline\r", "nul\x00byte", "%_*", "emoji 🧊", `\u0041`, "'; DROP TABLE t; --", "\u2028sep\u0085",
}

func TestQuoteStringRoundTrips(t *testing.T) {
	for _, s := range tricky {
		q, err := QuoteString(s)
		if err != nil {
			t.Fatalf("QuoteString(%q): %v", s, err)
		}
		got, rest := sparkUnescape(t, q)
		if got != s || rest != "" {
			t.Errorf("QuoteString(%q) = %s, parses back as %q (rest %q)", s, q, got, rest)
		}
		for _, r := range q {
			if r < 0x20 || r == 0x7f {
				t.Errorf("QuoteString(%q) = %q holds a raw control character", s, q)
			}
		}
	}
	if _, err := QuoteString("bad \xff utf8"); !errors.Is(err, ErrNotExpressible) {
		t.Errorf("invalid UTF-8: err = %v, want ErrNotExpressible", err)
	}
}

func TestQuoteString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a", `'a'`},
		{"it's", `'it\'s'`},
		{`c:\tmp`, `'c:\\tmp'`},
		{"line\nbreak", `'line\u000abreak'`},
		{"ünï", `'ünï'`},
		{"", `''`},
	} {
		got, err := QuoteString(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("QuoteString(%q) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestQuoteIdent(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"events", "`events`"},
		{"my.table", "`my.table`"},
		{"a`b", "`a``b`"},
		{"`", "````"},
		{"it's", "`it's`"},
		{"日本", "`日本`"},
	} {
		got, err := QuoteIdent(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("QuoteIdent(%q) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "\xfe"} {
		if _, err := QuoteIdent(bad); !errors.Is(err, ErrNotExpressible) {
			t.Errorf("QuoteIdent(%q): err = %v, want ErrNotExpressible", bad, err)
		}
	}
	for _, parts := range [][]string{{"cat", "db", "t"}, {"a.b", "c`d", "it's"}, tricky} {
		q, err := QuoteMultipart(parts...)
		if err != nil {
			t.Fatal(err)
		}
		if got := sparkIdentParts(t, q); strings.Join(got, "\x00") != strings.Join(parts, "\x00") {
			t.Errorf("QuoteMultipart(%q) = %s parses back as %q", parts, q, got)
		}
	}
}

// testSchema has a column of every type a partition can be built on, with
// awkward names.
func testSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "kind of", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 4, Name: "local`ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 5, Name: "d", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 6, Name: "n", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 7, Name: "amt", Type: iceberg.DecimalTypeOf(10, 2)},
		iceberg.NestedField{ID: 8, Name: "blob", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 9, Name: "u", Type: iceberg.PrimitiveTypes.UUID},
		iceberg.NestedField{ID: 10, Name: "flag", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 11, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 12, Name: "dbl", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 13, Name: "s.t", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 14, Name: "in ner", Type: iceberg.PrimitiveTypes.String},
		}}},
		iceberg.NestedField{ID: 15, Name: "tags", Type: &iceberg.ListType{ElementID: 16, Element: iceberg.PrimitiveTypes.String}},
		iceberg.NestedField{ID: 17, Name: "t", Type: iceberg.PrimitiveTypes.Time},
	)
}

// specField is one partition field of a test spec: source column id,
// transform.
type specField struct {
	source    int
	transform iceberg.Transform
}

// testMeta builds table metadata partitioned by fields, and returns the
// partition field ids in the order given (NewMetadata assigns fresh ids).
func testMeta(t *testing.T, fields ...specField) (table.Metadata, []int) {
	t.Helper()
	sc := testSchema()
	pfs := make([]iceberg.PartitionField, len(fields))
	for i, f := range fields {
		pfs[i] = iceberg.PartitionField{SourceIDs: []int{f.source}, FieldID: 1000 + i,
			Name: "p" + string(rune('a'+i)), Transform: f.transform}
	}
	spec := iceberg.NewPartitionSpec(pfs...)
	meta, err := table.NewMetadata(sc, &spec, table.UnsortedSortOrder, "file:///tmp/wh/db/t", iceberg.Properties{"format-version": "2"})
	if err != nil {
		t.Fatal(err)
	}
	cur := meta.PartitionSpecByID(meta.DefaultPartitionSpec())
	ids := make([]int, 0, len(fields))
	for _, f := range cur.Fields() {
		ids = append(ids, f.FieldID)
	}
	return meta, ids
}

var testNow = time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC)

// settings are the thresholds the tests render with: the seeds' Spark
// defaults, fixed here so that a change of reactor's built-ins does not
// change the expected statements.
func settings() thresholds.Effective {
	s := thresholds.Default().For("db.events", nil)
	s.TargetFileSize, s.SmallFileSize, s.MaxFileSize = 512<<20, 402653184, 966367641
	s.MinInputFiles, s.DeleteFileThreshold, s.DeletedRowRatio = 5, 5, 0.3
	s.MaxGroupSize, s.PartialProgressCommits = 10<<30, 10
	s.DeleteTargetFileSize, s.DeleteMinInputFiles = 64<<20, 5
	s.RetainLast, s.OrphanMargin, s.OrphanDelete, s.ExpireDeletionDelay = 1, 72*time.Hour, false, 0
	return s
}

func job(kind jobkind.Kind, parts ...jobs.Partition) jobs.Job {
	return jobs.Job{ID: "j1", Kind: kind, Table: tablename.Of(table.Identifier{"db", "events"}),
		Partitions: parts, Settings: settings(), ScheduledAt: testNow}
}

func render1(t *testing.T, j jobs.Job, meta table.Metadata) Statement {
	t.Helper()
	sts, err := Render(j, meta, Options{Catalog: "lake"})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	if len(sts) != 1 {
		t.Fatalf("Render: %d statements, want 1: %+v", len(sts), sts)
	}
	return sts[0]
}

func TestRenderEachKind(t *testing.T) {
	meta, ids := testMeta(t, specField{2, iceberg.IdentityTransform{}})
	part := jobs.Partition{Key: "pa=books", Values: map[int]any{ids[0]: "books"}}
	orphansDelete := job(jobkind.RemoveOrphans)
	orphansDelete.OrphanSource = jobs.OrphansFromListing
	orphansDelete.Settings.OrphanDelete = true
	orphansDry := orphansDelete
	orphansDry.Settings.OrphanDelete = false
	expire := job(jobkind.ExpireSnapshots)
	expire.ExpireOlderThan = 48 * time.Hour
	expire.Settings.RetainLast = 3

	for _, tc := range []struct {
		name string
		job  jobs.Job
		want string
	}{
		{"compact", job(jobkind.Compact, part),
			"CALL `lake`.system.rewrite_data_files(table => '`lake`.`db`.`events`', strategy => 'binpack', " +
				"options => map('target-file-size-bytes', '536870912', 'min-file-size-bytes', '402653184', " +
				"'max-file-size-bytes', '966367641', 'min-input-files', '5', 'delete-file-threshold', '5', " +
				"'delete-ratio-threshold', '0.3', 'max-file-group-size-bytes', '10737418240', " +
				"'partial-progress.enabled', 'true', 'partial-progress.max-commits', '10'), " +
				"where => '`kind of` = \\'books\\'')"},
		{"rewrite position deletes", job(jobkind.RewritePositionDeletes, part),
			"CALL `lake`.system.rewrite_position_delete_files(table => '`lake`.`db`.`events`', " +
				"options => map('target-file-size-bytes', '67108864', 'min-input-files', '5'), " +
				"where => '`kind of` = \\'books\\'')"},
		{"expire", expire,
			"CALL `lake`.system.expire_snapshots(table => '`lake`.`db`.`events`', " +
				"older_than => TIMESTAMP '2026-11-27 12:00:00.123456Z', retain_last => 3)"},
		{"orphans dry run", orphansDry,
			"CALL `lake`.system.remove_orphan_files(table => '`lake`.`db`.`events`', " +
				"older_than => TIMESTAMP '2026-11-26 12:00:00.123456Z', dry_run => true)"},
		{"orphans delete", orphansDelete,
			"CALL `lake`.system.remove_orphan_files(table => '`lake`.`db`.`events`', " +
				"older_than => TIMESTAMP '2026-11-26 12:00:00.123456Z', dry_run => false)"},
		{"rewrite manifests", job(jobkind.RewriteManifests),
			"CALL `lake`.system.rewrite_manifests(table => '`lake`.`db`.`events`')"},
		{"sort", sortJob(part, "`kind of` DESC, `it's`"), "strategy => 'sort', sort_order => '`kind of` DESC NULLS LAST, `it\\'s` ASC NULLS FIRST', options"},
		{"zorder", sortJob(part, "zorder(a, b)"), "strategy => 'sort', sort_order => 'zorder(a, b)', options"},
		{"sort by the table's order", sortJob(part, ""), "strategy => 'sort', options => map("},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := render1(t, tc.job, meta)
			if tc.job.Kind == jobkind.Sort {
				if !strings.Contains(st.SQL, tc.want) || !strings.Contains(st.SQL, "'rewrite-all', 'true'") {
					t.Errorf("SQL %s\nwant it to contain %s and rewrite-all", st.SQL, tc.want)
				}
				return
			}
			if st.SQL != tc.want {
				t.Errorf("SQL\n got: %s\nwant: %s", st.SQL, tc.want)
			}
			if len(st.Columns) == 0 || strings.Join(st.Columns, ",") != strings.Join(ResultColumns(st.Procedure), ",") {
				t.Errorf("columns %v for %s", st.Columns, st.Procedure)
			}
		})
	}
}

// sortJob is a sort job over one partition in the given order.
func sortJob(part jobs.Partition, order string) jobs.Job {
	j := job(jobkind.Sort, part)
	j.SortOrder = order
	return j
}

func TestRenderRejects(t *testing.T) {
	meta, ids := testMeta(t, specField{2, iceberg.IdentityTransform{}})
	part := jobs.Partition{Key: "pa=books", Values: map[int]any{ids[0]: "books"}}
	dry := func(j jobs.Job) jobs.Job { j.DryRun = true; return j }
	deferred := job(jobkind.ExpireSnapshots)
	deferred.ExpireOlderThan = 48 * time.Hour
	deferred.Settings.ExpireDeletionDelay = 72 * time.Hour // beyond the 48h reader margin
	noHorizon := job(jobkind.ExpireSnapshots)
	tracked := job(jobkind.RemoveOrphans)
	tracked.OrphanSource = jobs.OrphansFromTracking
	for _, tc := range []struct {
		name string
		job  jobs.Job
		want error
	}{
		{"delete expired files", job(jobkind.DeleteExpiredFiles), ErrNoSparkForm},
		{"unknown kind", job(jobkind.Kind(99)), ErrNoSparkForm},
		{"dry-run compaction", dry(job(jobkind.Compact, part)), ErrNotExpressible},
		{"dry-run delete rewrite", dry(job(jobkind.RewritePositionDeletes, part)), ErrNotExpressible},
		{"dry-run expiry", dry(deferred), ErrNotExpressible},
		{"dry-run manifests", dry(job(jobkind.RewriteManifests)), ErrNotExpressible},
		{"deferred expiry deletion", deferred, ErrNotExpressible},
		{"expiry without horizon", noHorizon, ErrNotExpressible},
		{"tracked orphan candidates", tracked, ErrNotExpressible},
		{"table with an empty part", func() jobs.Job {
			j := job(jobkind.RewriteManifests)
			j.Table = tablename.Of(table.Identifier{"db", ""})
			return j
		}(), ErrNotExpressible},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(tc.job, meta, Options{Catalog: "lake"})
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := Render(job(jobkind.RewriteManifests), meta, Options{}); err == nil {
		t.Error("no catalog: no error")
	}
	j := job(jobkind.ExpireSnapshots)
	j.ExpireOlderThan, j.ScheduledAt = time.Hour, time.Time{}
	if _, err := Render(j, meta, Options{Catalog: "lake"}); err == nil {
		t.Error("no time: no error")
	}
	if _, err := Render(job(jobkind.Compact, part), nil, Options{Catalog: "lake"}); err == nil {
		t.Error("compaction without metadata: no error")
	}
	for _, kind := range []jobkind.Kind{jobkind.Compact, jobkind.RewritePositionDeletes} {
		if sts, err := Render(job(kind), meta, Options{Catalog: "lake"}); err != nil || len(sts) != 0 {
			t.Errorf("%s without partitions: %d statements, %v; want none (nothing to do)", kind, len(sts), err)
		}
	}
}

// TestTrickyNames: catalog, namespace and table names with dots,
// backticks, quotes and unicode survive both levels of quoting (identifier
// inside a string literal).
func TestTrickyNames(t *testing.T) {
	for _, ident := range [][]string{
		{"db", "events"},
		{"my.db", "ev`ents"},
		{"ns", "sub ns", "it's \\ a `table`"},
		{"日本", "テーブル"},
	} {
		for _, catalog := range []string{"lake", "my`cat", "cat.alog"} {
			j := job(jobkind.RewriteManifests)
			j.Table = tablename.Of(ident)
			st := render1Catalog(t, j, catalog)
			prefix := "CALL "
			cat, _ := QuoteIdent(catalog)
			prefix += cat + ".system.rewrite_manifests(table => "
			if !strings.HasPrefix(st.SQL, prefix) {
				t.Fatalf("SQL %s does not start with %s", st.SQL, prefix)
			}
			lit, rest := sparkUnescape(t, strings.TrimPrefix(st.SQL, prefix))
			if rest != ")" {
				t.Errorf("after the table literal: %q", rest)
			}
			want := append([]string{catalog}, ident...)
			if got := sparkIdentParts(t, lit); strings.Join(got, "\x00") != strings.Join(want, "\x00") {
				t.Errorf("table %q in catalog %q: literal %s names %q", ident, catalog, lit, got)
			}
		}
	}
}

func render1Catalog(t *testing.T, j jobs.Job, catalog string) Statement {
	t.Helper()
	sts, err := Render(j, nil, Options{Catalog: catalog})
	if err != nil || len(sts) != 1 {
		t.Fatalf("Render: %v, %d statements", err, len(sts))
	}
	return sts[0]
}

// whereOf renders a compaction of parts and returns the where predicate as
// Spark sees it (the outer string literal unescaped), "" if none.
func whereOf(t *testing.T, meta table.Metadata, parts ...jobs.Partition) (string, error) {
	t.Helper()
	sts, err := Render(job(jobkind.Compact, parts...), meta, Options{Catalog: "lake"})
	if err != nil {
		return "", err
	}
	if len(sts) != 1 {
		t.Fatalf("%d statements", len(sts))
	}
	i := strings.Index(sts[0].SQL, ", where => ")
	if i < 0 {
		return "", nil
	}
	pred, rest := sparkUnescape(t, sts[0].SQL[i+len(", where => "):])
	if rest != ")" {
		t.Fatalf("after where: %q", rest)
	}
	return pred, nil
}

func TestWherePredicates(t *testing.T) {
	u := uuid.MustParse("0190e0a2-7b1c-7cc0-8e2a-5f4e0b1d2c3e")
	day := int32(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC).Unix() / 86400)
	for _, tc := range []struct {
		name  string
		field specField
		value any
		want  string
	}{
		{"identity string", specField{2, iceberg.IdentityTransform{}}, "books", "`kind of` = 'books'"},
		{"identity quote and backslash", specField{2, iceberg.IdentityTransform{}}, `it's \ ü`, "`kind of` = 'it\\'s \\\\ ü'"},
		{"identity newline", specField{2, iceberg.IdentityTransform{}}, "a\nb", "`kind of` = 'a\\u000ab'"},
		{"identity unicode", specField{2, iceberg.IdentityTransform{}}, "naïve 日本 🧊", "`kind of` = 'naïve 日本 🧊'"},
		{"identity null", specField{2, iceberg.IdentityTransform{}}, nil, "`kind of` IS NULL"},
		{"identity long", specField{1, iceberg.IdentityTransform{}}, int64(-42), "`id` = -42L"},
		{"identity min long", specField{1, iceberg.IdentityTransform{}}, int64(math.MinInt64), "`id` = CAST('-9223372036854775808' AS BIGINT)"},
		{"identity int", specField{6, iceberg.IdentityTransform{}}, int32(7), "`n` = 7"},
		{"identity min int", specField{6, iceberg.IdentityTransform{}}, int32(math.MinInt32), "`n` = CAST('-2147483648' AS INT)"},
		{"identity date", specField{5, iceberg.IdentityTransform{}}, iceberg.Date(day), "`d` = DATE '2024-02-29'"},
		{"identity timestamptz", specField{3, iceberg.IdentityTransform{}}, iceberg.Timestamp(1700000000123456),
			"`ts` = TIMESTAMP '2023-11-14 22:13:20.123456Z'"},
		{"identity timestamp ntz", specField{4, iceberg.IdentityTransform{}}, iceberg.Timestamp(0),
			"`local``ts` = TIMESTAMP_NTZ '1970-01-01 00:00:00.000000'"},
		{"identity decimal", specField{7, iceberg.IdentityTransform{}},
			iceberg.DecimalLiteral{Val: decimal128.FromI64(-1234), Scale: 2}, "`amt` = CAST('-12.34' AS DECIMAL(10,2))"},
		{"identity binary", specField{8, iceberg.IdentityTransform{}}, []byte{0x00, 0xab, '\''}, "`blob` = X'00AB27'"},
		{"identity uuid", specField{9, iceberg.IdentityTransform{}}, u, "`u` = '0190e0a2-7b1c-7cc0-8e2a-5f4e0b1d2c3e'"},
		{"identity boolean", specField{10, iceberg.IdentityTransform{}}, true, "`flag` = true"},
		{"identity float", specField{11, iceberg.IdentityTransform{}}, float32(1.1), "`f` = CAST('1.1' AS FLOAT)"},
		{"identity double", specField{12, iceberg.IdentityTransform{}}, 0.1, "`dbl` = CAST('0.1' AS DOUBLE)"},
		{"nested column", specField{14, iceberg.IdentityTransform{}}, "x", "`s.t`.`in ner` = 'x'"},
		{"day of timestamptz", specField{3, iceberg.DayTransform{}}, iceberg.Date(day),
			"`ts` >= TIMESTAMP '2024-02-29 00:00:00.000000Z' AND `ts` < TIMESTAMP '2024-03-01 00:00:00.000000Z'"},
		{"day as int32", specField{3, iceberg.DayTransform{}}, day,
			"`ts` >= TIMESTAMP '2024-02-29 00:00:00.000000Z' AND `ts` < TIMESTAMP '2024-03-01 00:00:00.000000Z'"},
		{"day of date", specField{5, iceberg.DayTransform{}}, iceberg.Date(day),
			"`d` >= DATE '2024-02-29' AND `d` < DATE '2024-03-01'"},
		{"month of timestamp ntz", specField{4, iceberg.MonthTransform{}}, int32((2024-1970)*12 + 11),
			"`local``ts` >= TIMESTAMP_NTZ '2024-12-01 00:00:00.000000' AND `local``ts` < TIMESTAMP_NTZ '2025-01-01 00:00:00.000000'"},
		{"year of date", specField{5, iceberg.YearTransform{}}, int32(-1),
			"`d` >= DATE '1969-01-01' AND `d` < DATE '1970-01-01'"},
		{"hour of timestamptz", specField{3, iceberg.HourTransform{}}, int32(-1),
			"`ts` >= TIMESTAMP '1969-12-31 23:00:00.000000Z' AND `ts` < TIMESTAMP '1970-01-01 00:00:00.000000Z'"},
		{"hour null", specField{3, iceberg.HourTransform{}}, nil, "`ts` IS NULL"},
		{"bucket", specField{1, iceberg.BucketTransform{NumBuckets: 16}}, int32(3), "`lake`.system.bucket(16, `id`) = 3"},
		{"truncate string", specField{2, iceberg.TruncateTransform{Width: 3}}, "it'", "startswith(`kind of`, 'it\\'')"},
		{"truncate unicode string", specField{2, iceberg.TruncateTransform{Width: 2}}, "日本", "startswith(`kind of`, '日本')"},
		{"truncate short string", specField{2, iceberg.TruncateTransform{Width: 3}}, "ab", "`kind of` = 'ab'"},
		{"truncate long", specField{1, iceberg.TruncateTransform{Width: 10}}, int64(-20), "`id` >= -20L AND `id` < -10L"},
		{"truncate int", specField{6, iceberg.TruncateTransform{Width: 100}}, int32(200), "`n` >= 200 AND `n` < 300"},
		{"truncate int top", specField{6, iceberg.TruncateTransform{Width: 10}}, int32(math.MaxInt32 - 7), "`n` >= 2147483640"},
		{"truncate decimal", specField{7, iceberg.TruncateTransform{Width: 50}},
			iceberg.DecimalLiteral{Val: decimal128.FromI64(-150), Scale: 2},
			"`amt` >= CAST('-1.50' AS DECIMAL(10,2)) AND `amt` < CAST('-1.00' AS DECIMAL(10,2))"},
		{"truncate small decimal", specField{7, iceberg.TruncateTransform{Width: 5}},
			iceberg.DecimalLiteral{Val: decimal128.FromI64(5), Scale: 2},
			"`amt` >= CAST('0.05' AS DECIMAL(10,2)) AND `amt` < CAST('0.10' AS DECIMAL(10,2))"},
		{"void", specField{2, iceberg.VoidTransform{}}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			meta, ids := testMeta(t, tc.field)
			got, err := whereOf(t, meta, jobs.Partition{Key: "k", Values: map[int]any{ids[0]: tc.value}})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("where\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
}

func TestWhereRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		field specField
		value any
	}{
		{"NaN", specField{12, iceberg.IdentityTransform{}}, math.NaN()},
		{"infinity", specField{11, iceberg.IdentityTransform{}}, float32(math.Inf(1))},
		{"invalid UTF-8", specField{2, iceberg.IdentityTransform{}}, "\xff"},
		{"wrong value type", specField{1, iceberg.IdentityTransform{}}, "seven"},
		{"time column", specField{17, iceberg.IdentityTransform{}}, iceberg.Time(1)},
		{"hour of a date", specField{5, iceberg.HourTransform{}}, int32(1)},
		{"list element", specField{16, iceberg.IdentityTransform{}}, "x"},
		{"year beyond 9999", specField{5, iceberg.YearTransform{}}, int32(9000)},
		{"truncate binary", specField{8, iceberg.TruncateTransform{Width: 2}}, []byte("ab")},
		{"decimal of another scale", specField{7, iceberg.IdentityTransform{}}, iceberg.DecimalLiteral{Val: decimal128.FromI64(1), Scale: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			meta, ids := testMeta(t, tc.field)
			_, err := whereOf(t, meta, jobs.Partition{Key: "k", Values: map[int]any{ids[0]: tc.value}})
			if !errors.Is(err, ErrNotExpressible) {
				t.Errorf("err = %v, want ErrNotExpressible", err)
			}
		})
	}
	meta, _ := testMeta(t, specField{2, iceberg.IdentityTransform{}})
	if _, err := whereOf(t, meta, jobs.Partition{Key: "k", Values: map[int]any{}}); !errors.Is(err, ErrNotExpressible) {
		t.Errorf("missing value: err = %v", err)
	}
	if _, err := whereOf(t, meta, jobs.Partition{Key: "k", SpecID: 7}); !errors.Is(err, ErrNotExpressible) {
		t.Errorf("unknown spec: err = %v", err)
	}
}

func TestWhereSeveralFieldsAndPartitions(t *testing.T) {
	meta, ids := testMeta(t, specField{2, iceberg.IdentityTransform{}}, specField{3, iceberg.DayTransform{}},
		specField{1, iceberg.BucketTransform{NumBuckets: 4}})
	p1 := jobs.Partition{Key: "a", Values: map[int]any{ids[0]: "it's", ids[1]: iceberg.Date(0), ids[2]: int32(1)}}
	p2 := jobs.Partition{Key: "b", Values: map[int]any{ids[0]: nil, ids[1]: iceberg.Date(1), ids[2]: int32(0)}}
	got, err := whereOf(t, meta, p1, p2)
	if err != nil {
		t.Fatal(err)
	}
	want := "(`kind of` = 'it\\'s' AND `ts` >= TIMESTAMP '1970-01-01 00:00:00.000000Z' AND `ts` < TIMESTAMP '1970-01-02 00:00:00.000000Z' AND `lake`.system.bucket(4, `id`) = 1)" +
		" OR (`kind of` IS NULL AND `ts` >= TIMESTAMP '1970-01-02 00:00:00.000000Z' AND `ts` < TIMESTAMP '1970-01-03 00:00:00.000000Z' AND `lake`.system.bucket(4, `id`) = 0)"
	if got != want {
		t.Errorf("where\n got: %s\nwant: %s", got, want)
	}
}

// TestSameColumnFields: a field whose column also has an identity field is
// implied by it and left out; a bucket field sharing its column with another
// transform is refused (Iceberg mis-projects the function predicate).
func TestSameColumnFields(t *testing.T) {
	meta, ids := testMeta(t, specField{2, iceberg.IdentityTransform{}}, specField{2, iceberg.TruncateTransform{Width: 2}},
		specField{1, iceberg.IdentityTransform{}}, specField{1, iceberg.BucketTransform{NumBuckets: 4}})
	got, err := whereOf(t, meta, jobs.Partition{Key: "k", Values: map[int]any{ids[0]: "naive", ids[1]: "na", ids[2]: int64(5), ids[3]: int32(2)}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "`kind of` = 'naive' AND `id` = 5L"; got != want {
		t.Errorf("where\n got: %s\nwant: %s", got, want)
	}
	meta, ids = testMeta(t, specField{1, iceberg.TruncateTransform{Width: 10}}, specField{1, iceberg.BucketTransform{NumBuckets: 4}})
	_, err = whereOf(t, meta, jobs.Partition{Key: "k", Values: map[int]any{ids[0]: int64(10), ids[1]: int32(2)}})
	if !errors.Is(err, ErrNotExpressible) {
		t.Errorf("bucket beside truncate on one column: err = %v, want ErrNotExpressible", err)
	}
}

func TestUnpartitionedHasNoWhere(t *testing.T) {
	meta, err := table.NewMetadata(testSchema(), iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "file:///tmp/t", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := whereOf(t, meta, jobs.Partition{Key: "(unpartitioned)"})
	if err != nil || got != "" {
		t.Errorf("where = %q, %v; want none", got, err)
	}
}

// TestOldSpecRejected: after partition evolution a partition of the old
// spec cannot be targeted by a row predicate without also selecting the
// current spec's files.
func TestOldSpecRejected(t *testing.T) {
	meta, ids := testMeta(t, specField{2, iceberg.IdentityTransform{}})
	b, err := table.MetadataBuilderFromBase(meta, "")
	if err != nil {
		t.Fatal(err)
	}
	next := iceberg.NewPartitionSpecID(1,
		iceberg.PartitionField{SourceIDs: []int{2}, FieldID: ids[0], Name: "pa", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{3}, FieldID: ids[0] + 1, Name: "pb", Transform: iceberg.DayTransform{}})
	if err := b.AddPartitionSpec(&next, false); err != nil {
		t.Fatal(err)
	}
	if err := b.SetDefaultSpecID(-1); err != nil {
		t.Fatal(err)
	}
	evolved, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if evolved.DefaultPartitionSpec() == 0 {
		t.Fatal("default spec did not change")
	}
	_, err = whereOf(t, evolved, jobs.Partition{Key: "spec=0/pa=x", SpecID: 0, Values: map[int]any{ids[0]: "x"}})
	if !errors.Is(err, ErrNotExpressible) {
		t.Errorf("old spec: err = %v, want ErrNotExpressible", err)
	}
}

// TestCompactWithDeletesSplits: partitions whose deletes must all be applied
// get their own call with delete-file-threshold=1 and min-input-files=1.
func TestCompactWithDeletesSplits(t *testing.T) {
	meta, ids := testMeta(t, specField{2, iceberg.IdentityTransform{}})
	plain := jobs.Partition{Key: "pa=a", Values: map[int]any{ids[0]: "a"}}
	deletes := jobs.Partition{Key: "pa=b", Values: map[int]any{ids[0]: "b"}, ApplyDeletes: true}
	sts, err := Render(job(jobkind.Compact, deletes, plain), meta, Options{Catalog: "lake"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 2 {
		t.Fatalf("%d statements, want 2", len(sts))
	}
	if !strings.Contains(sts[0].SQL, "'min-input-files', '5'") || !strings.Contains(sts[0].SQL, "'delete-file-threshold', '5'") ||
		!strings.Contains(sts[0].SQL, `= \'a\'`) || sts[0].Partitions[0] != "pa=a" {
		t.Errorf("plain statement: %s", sts[0].SQL)
	}
	if !strings.Contains(sts[1].SQL, "'min-input-files', '1'") || !strings.Contains(sts[1].SQL, "'delete-file-threshold', '1'") ||
		!strings.Contains(sts[1].SQL, `= \'b\'`) || sts[1].Partitions[0] != "pa=b" {
		t.Errorf("deletes statement: %s", sts[1].SQL)
	}
}

// TestSettingsFlowIntoOptions: configured thresholds, not the built-ins,
// reach the options map.
func TestSettingsFlowIntoOptions(t *testing.T) {
	meta, ids := testMeta(t, specField{2, iceberg.IdentityTransform{}})
	j := job(jobkind.Compact, jobs.Partition{Key: "pa=a", Values: map[int]any{ids[0]: "a"}})
	j.Settings.TargetFileSize, j.Settings.SmallFileSize, j.Settings.MaxFileSize = 1<<20, 3<<18, 1887436
	j.Settings.MinInputFiles, j.Settings.DeleteFileThreshold, j.Settings.DeletedRowRatio = 2, 3, 0.25
	j.Settings.MaxGroupSize, j.Settings.PartialProgressCommits = 1<<30, 4
	st := render1(t, j, meta)
	for _, want := range []string{"'target-file-size-bytes', '1048576'", "'min-file-size-bytes', '786432'",
		"'max-file-size-bytes', '1887436'", "'min-input-files', '2'", "'delete-file-threshold', '3'",
		"'delete-ratio-threshold', '0.25'", "'max-file-group-size-bytes', '1073741824'", "'partial-progress.max-commits', '4'"} {
		if !strings.Contains(st.SQL, want) {
			t.Errorf("%s lacks %s", st.SQL, want)
		}
	}
	j = job(jobkind.RewritePositionDeletes, j.Partitions...)
	j.Settings.DeleteTargetFileSize, j.Settings.DeleteMinInputFiles = 8<<20, 3
	st = render1(t, j, meta)
	if !strings.Contains(st.SQL, "map('target-file-size-bytes', '8388608', 'min-input-files', '3')") {
		t.Errorf("position deletes: %s", st.SQL)
	}
}

// TestOlderThanIsAbsoluteAndTruncatedToThePast: Options.Now wins over the
// job's ScheduledAt, and sub-microsecond time is dropped towards the past.
func TestOlderThanIsAbsoluteAndTruncatedToThePast(t *testing.T) {
	j := job(jobkind.ExpireSnapshots)
	j.ExpireOlderThan = 72 * time.Hour
	now := time.Date(2030, 1, 2, 3, 4, 5, 999, time.FixedZone("X", 5*3600))
	sts, err := Render(j, nil, Options{Catalog: "lake", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if want := "older_than => TIMESTAMP '2029-12-29 22:04:05.000000Z'"; !strings.Contains(sts[0].SQL, want) {
		t.Errorf("%s lacks %s", sts[0].SQL, want)
	}
}

func TestStatementsAreValidUTF8(t *testing.T) {
	meta, ids := testMeta(t, specField{2, iceberg.IdentityTransform{}})
	for _, v := range tricky {
		st := render1(t, job(jobkind.Compact, jobs.Partition{Key: "k", Values: map[int]any{ids[0]: v}}), meta)
		if !utf8.ValidString(st.SQL) || strings.ContainsAny(st.SQL, "\n\r\x00") {
			t.Errorf("value %q: statement %q", v, st.SQL)
		}
		where, err := whereOf(t, meta, jobs.Partition{Key: "k", Values: map[int]any{ids[0]: v}})
		if err != nil {
			t.Fatal(err)
		}
		lit, rest := sparkUnescape(t, strings.TrimPrefix(where, "`kind of` = "))
		if lit != v || rest != "" {
			t.Errorf("value %q: where %s parses back as %q", v, where, lit)
		}
	}
}
