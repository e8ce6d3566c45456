package commit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/executor/internal/datapath"
)

// SnapshotWriter writes the files of one snapshot reactor commits: its
// manifests, each written once and reused by every commit attempt, and one
// manifest list per attempt (the only file whose content depends on the
// snapshot the attempt builds on). Names follow iceberg-go's producer:
// <commit-uuid>-m<n>.avro and snap-<snapshot-id>-<attempt>-<commit-uuid>.avro.
type SnapshotWriter struct {
	fs         iceio.WriteFileIO
	loc        table.LocationProvider
	version    int
	SnapshotID int64
	commitUUID uuid.UUID
	written    int // manifests written so far, numbering the next
}

func NewSnapshotWriter(tbl *table.Table, fs iceio.IO) (*SnapshotWriter, error) {
	wfs, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return nil, errors.New("table io cannot write files")
	}
	loc, err := tbl.LocationProvider()
	if err != nil {
		return nil, fmt.Errorf("location provider: %w", err)
	}
	meta := tbl.Metadata()
	sw := &SnapshotWriter{fs: wfs, loc: loc, version: meta.Version(), commitUUID: uuid.New()}
	sw.SnapshotID = freshSnapshotID(meta)
	return sw, nil
}

// freshSnapshotID draws a snapshot id the way iceberg-go does (from a random
// UUID) that meta does not use yet.
func freshSnapshotID(meta table.Metadata) int64 {
	for {
		id := uuid.New()
		var v uint64
		for i := range 8 {
			v |= uint64(id[i]^id[i+8]) << (8 * i)
		}
		sid := int64(v & (1<<63 - 1))
		if sid != 0 && meta.SnapshotByID(sid) == nil {
			return sid
		}
	}
}

// writeManifest writes one manifest of this snapshot with the entries
// write adds. A failed write removes its partial file.
func (sw *SnapshotWriter) writeManifest(meta table.Metadata, specID int32, content iceberg.ManifestContent,
	write func(*iceberg.ManifestWriter) error) (_ iceberg.ManifestFile, err error) {
	spec := meta.PartitionSpecByID(int(specID))
	if spec == nil {
		return nil, fmt.Errorf("unknown partition spec %d", specID)
	}
	sw.written++
	path := sw.loc.NewMetadataLocation(fmt.Sprintf("%s-m%d.avro", sw.commitUUID, sw.written))
	out, err := sw.fs.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create manifest: %w", err)
	}
	cw := datapath.NewCountingWriter(out, 0)
	defer func() {
		if err != nil {
			_ = cw.Close()
			err = errors.Join(err, ignoreNotExist(sw.fs.Remove(path)))
		}
	}()
	wr, err := iceberg.NewManifestWriter(sw.version, cw, *spec, meta.CurrentSchema(), sw.SnapshotID,
		iceberg.WithManifestWriterContent(content))
	if err != nil {
		return nil, fmt.Errorf("manifest writer: %w", err)
	}
	if err := write(wr); err != nil {
		_ = wr.Close()
		return nil, fmt.Errorf("write manifest %s: %w", path, err)
	}
	if err := wr.Close(); err != nil {
		return nil, fmt.Errorf("close manifest %s: %w", path, err)
	}
	if err := cw.Close(); err != nil {
		return nil, fmt.Errorf("close manifest %s: %w", path, err)
	}
	return wr.ToManifestFile(path, cw.N, iceberg.WithManifestFileContent(content))
}

// listPath is where attempt's manifest list goes.
func (sw *SnapshotWriter) listPath(attempt int) string {
	return sw.loc.NewMetadataLocation(fmt.Sprintf("snap-%d-%d-%s.avro", sw.SnapshotID, attempt, sw.commitUUID))
}

// writeList writes attempt's manifest list on parent at sequence number
// seq. Manifests this snapshot wrote get seq here (their entries inherit
// it), so the same manifest files serve every attempt.
//
// On format v3 the list starts row ids at firstRowID (the table's
// next-row-id) and gives every data manifest without a first_row_id one
// (the v2-era manifests of an upgraded table, on its first commit since):
// assigned is how many row ids that took, the snapshot's added-rows. A
// delete-only snapshot on a table whose data manifests all have theirs
// assigns none.
func (sw *SnapshotWriter) writeList(path string, parent *table.Snapshot, seq, firstRowID int64, manifests []iceberg.ManifestFile) (assigned int64, err error) {
	out, err := sw.fs.Create(path)
	if err != nil {
		return 0, fmt.Errorf("create manifest list: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, ignoreNotExist(sw.fs.Remove(path)))
		}
	}()
	var parentID *int64
	if parent != nil {
		id := parent.SnapshotID
		parentID = &id
	}
	var lw *iceberg.ManifestListWriter
	switch sw.version {
	case 2:
		lw, err = iceberg.NewManifestListWriterV2(out, sw.SnapshotID, seq, parentID)
	case 3:
		lw, err = iceberg.NewManifestListWriterV3(out, sw.SnapshotID, seq, firstRowID, parentID)
	default:
		err = fmt.Errorf("format version %d is committed through iceberg-go's own producer", sw.version)
	}
	if err != nil {
		_ = out.Close()
		return 0, err
	}
	if err := lw.AddManifests(manifests); err != nil {
		_ = lw.Close()
		_ = out.Close()
		return 0, fmt.Errorf("write manifest list: %w", err)
	}
	if next := lw.NextRowID(); next != nil {
		assigned = *next - firstRowID
	}
	if err := lw.Close(); err != nil {
		_ = out.Close()
		return 0, fmt.Errorf("close manifest list: %w", err)
	}
	return assigned, out.Close()
}

// MainRefUpdate moves main to snapshotID keeping the branch's retention
// settings, as iceberg-go's producer does.
func MainRefUpdate(meta table.Metadata, snapshotID int64) table.Update {
	var maxRefAge, maxSnapshotAge int64
	var minSnapshots int
	for name, ref := range meta.Refs() {
		if name != table.MainBranch || ref.SnapshotRefType != table.BranchRef {
			continue
		}
		if ref.MaxRefAgeMs != nil {
			maxRefAge = *ref.MaxRefAgeMs
		}
		if ref.MaxSnapshotAgeMs != nil {
			maxSnapshotAge = *ref.MaxSnapshotAgeMs
		}
		if ref.MinSnapshotsToKeep != nil {
			minSnapshots = *ref.MinSnapshotsToKeep
		}
	}
	return table.NewSetSnapshotRefUpdate(table.MainBranch, snapshotID, table.BranchRef, maxRefAge, maxSnapshotAge, minSnapshots)
}

// DroppedMetadata lists the metadata files the commit pushed out of the
// metadata log when the table asks for them to be deleted
// (write.metadata.delete-after-commit.enabled), as iceberg-go deletes them
// after its own commits. The caller deletes them, under its deletion rule:
// the log is the table's writers' to fill.
func DroppedMetadata(base, next table.Metadata) []string {
	if !next.Properties().GetBool(table.MetadataDeleteAfterCommitEnabledKey, table.MetadataDeleteAfterCommitEnabledDefault) {
		return nil
	}
	kept := map[string]bool{}
	for e := range next.PreviousFiles() {
		kept[e.MetadataFile] = true
	}
	var out []string
	for e := range base.PreviousFiles() {
		if !kept[e.MetadataFile] {
			out = append(out, e.MetadataFile)
		}
	}
	return out
}

func ignoreNotExist(err error) error {
	if err == nil || errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	return err
}

// Attempt is what one catalog commit of a staged snapshot left.
type Attempt struct {
	Committed *table.Table
	// List is the manifest list the attempt wrote; "" when it failed
	// before reaching the catalog (and wrote nothing that stays).
	List string
	// DroppedMetadata are the metadata files the commit pushed out of the
	// log that the table asks to have deleted (DroppedMetadata).
	DroppedMetadata []string
}

// Commit writes the manifest list of attempt on head and commits the
// snapshot through the catalog, requiring that main still points at head's
// current snapshot: the same updates and requirements iceberg-go's
// transaction sends (add-snapshot, set-snapshot-ref main with its retention
// carried over, the default name mapping when the table has none;
// assert-table-uuid, assert-ref-snapshot-id).
func (sw *SnapshotWriter) Commit(ctx context.Context, cat catalog.Catalog, head *table.Table, attempt int,
	manifests []iceberg.ManifestFile, summary table.Summary) (Attempt, error) {
	meta := head.Metadata()
	parent := meta.CurrentSnapshot()
	if parent == nil {
		return Attempt{}, fmt.Errorf("%w: table has no current snapshot", ErrDiverged)
	}
	if meta.SnapshotByID(sw.SnapshotID) != nil {
		return Attempt{}, fmt.Errorf("snapshot id %d is taken", sw.SnapshotID)
	}
	var props []table.Update
	if meta.NameMapping() == nil {
		mapping, err := json.Marshal(meta.CurrentSchema().NameMapping())
		if err != nil {
			return Attempt{}, fmt.Errorf("name mapping: %w", err)
		}
		props = append(props, table.NewSetPropertiesUpdate(iceberg.Properties{table.DefaultNameMappingKey: string(mapping)}))
	}
	seq := meta.LastSequenceNumber() + 1
	res := Attempt{List: sw.listPath(attempt)}
	firstRowID := meta.NextRowID()
	assigned, err := sw.writeList(res.List, parent, seq, firstRowID, manifests)
	if err != nil {
		return Attempt{}, err
	}
	parentID := parent.SnapshotID
	schemaID := meta.CurrentSchema().ID
	snap := table.Snapshot{
		SnapshotID:       sw.SnapshotID,
		ParentSnapshotID: &parentID,
		SequenceNumber:   seq,
		TimestampMs:      time.Now().UnixMilli(),
		ManifestList:     res.List,
		Summary:          &summary,
		SchemaID:         &schemaID,
	}
	if sw.version >= 3 {
		// Row lineage (spec "Row Lineage"): the snapshot's first row id is
		// the table's next-row-id, and it adds the ids the list assigned.
		snap.FirstRowID, snap.AddedRows = &firstRowID, &assigned
	}
	updates := append([]table.Update{table.NewAddSnapshotUpdate(&snap), MainRefUpdate(meta, sw.SnapshotID)}, props...)
	reqs := []table.Requirement{
		table.AssertTableUUID(meta.TableUUID()),
		table.AssertRefSnapshotID(table.MainBranch, &parentID),
	}
	newMeta, newLoc, err := cat.CommitTable(ctx, head.Identifier(), reqs, updates)
	if err != nil {
		return res, err
	}
	fsF := func(ctx context.Context) (iceio.IO, error) { return head.FS(ctx) }
	res.Committed = table.New(head.Identifier(), newMeta, newLoc, fsF, cat)
	res.DroppedMetadata = DroppedMetadata(meta, newMeta)
	return res, nil
}
