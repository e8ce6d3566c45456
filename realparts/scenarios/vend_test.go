package scenarios

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/icereactor/reactor/streamwriter"
)

// minioSTS issues and revokes temporary credentials at the suite's real
// MinIO: STS AssumeRole signed with the root account (so the credentials
// carry its rights), each generation tagged with a TokenRevokeType of its
// own, and the admin API's revoke-tokens for that type. After a
// revocation MinIO no longer knows the access key and refuses every
// request made with it (InvalidAccessKeyId).
type minioSTS struct {
	endpoint string
	hc       *http.Client
}

type vended struct {
	gen                    int
	accessKey, secret, tok string
	expires                time.Time
}

func (m *minioSTS) sign(ctx context.Context, req *http.Request, body []byte, service string) error {
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	return v4.NewSigner().SignHTTP(ctx, aws.Credentials{AccessKeyID: suiteAccessKey, SecretAccessKey: suiteSecretKey},
		req, hash, service, "us-east-1", time.Now())
}

// assumeRole issues generation gen's credentials (15 minutes, MinIO's
// shortest).
func (m *minioSTS) assumeRole(ctx context.Context, gen int) (vended, error) {
	form := url.Values{"Action": {"AssumeRole"}, "Version": {"2011-06-15"}, "DurationSeconds": {"900"},
		"TokenRevokeType": {fmt.Sprintf("realparts-vend-%d", gen)}}
	body := []byte(form.Encode())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.endpoint+"/", bytes.NewReader(body))
	if err != nil {
		return vended{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if err := m.sign(ctx, req, body, "sts"); err != nil {
		return vended{}, err
	}
	resp, err := m.hc.Do(req)
	if err != nil {
		return vended{}, fmt.Errorf("minio AssumeRole: %w", err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return vended{}, fmt.Errorf("minio AssumeRole: %s: %s", resp.Status, data)
	}
	var out struct {
		Result struct {
			Credentials struct {
				AccessKeyID     string    `xml:"AccessKeyId"`
				SecretAccessKey string    `xml:"SecretAccessKey"`
				SessionToken    string    `xml:"SessionToken"`
				Expiration      time.Time `xml:"Expiration"`
			} `xml:"Credentials"`
		} `xml:"AssumeRoleResult"`
	}
	if err := xml.Unmarshal(data, &out); err != nil {
		return vended{}, fmt.Errorf("minio AssumeRole answer: %w", err)
	}
	c := out.Result.Credentials
	if c.AccessKeyID == "" || c.SessionToken == "" {
		return vended{}, fmt.Errorf("minio AssumeRole answered no credentials")
	}
	return vended{gen: gen, accessKey: c.AccessKeyID, secret: c.SecretAccessKey, tok: c.SessionToken, expires: c.Expiration}, nil
}

// revoke revokes generation gen's credentials.
func (m *minioSTS) revoke(ctx context.Context, gen int) error {
	u := m.endpoint + "/minio/admin/v3/revoke-tokens/builtin?" + url.Values{"user": {suiteAccessKey},
		"tokenRevokeType": {fmt.Sprintf("realparts-vend-%d", gen)}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return err
	}
	if err := m.sign(ctx, req, nil, "s3"); err != nil {
		return err
	}
	resp, err := m.hc.Do(req)
	if err != nil {
		return fmt.Errorf("minio revoke-tokens: %w", err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("minio revoke-tokens: %s: %s", resp.Status, data)
	}
	return nil
}

// vendFront is a test-only STAND-IN in front of the real REST catalog,
// vending storage credentials as Polaris or Unity do: a LoadTable that
// asks for them (X-Iceberg-Access-Delegation: vended-credentials) gets
// the current generation of MinIO STS credentials in its config. The
// catalog, its commits and the credentials are real; the vending is the
// front's. When told to, it refuses the table's commits as lost races
// (409) after revoking the credentials in use.
type vendFront struct {
	t   *testing.T
	srv *httptest.Server
	sts *minioSTS

	mu      sync.Mutex
	current *vended
	issued  []vended
	loads   int // LoadTables answered with credentials
	asked   int // LoadTables that asked for them
	// refuseCommits: answer every commit 409, after revoking the
	// credentials in use at the first.
	refuseCommits bool
	refused       int
}

var loadTablePath = regexp.MustCompile(`^/v1/(?:[^/]+/)?namespaces/[^/]+/tables/[^/]+$`)

func startVendFront(t *testing.T, catalogURI string, sts *minioSTS) *vendFront {
	t.Helper()
	target, err := url.Parse(catalogURI)
	if err != nil {
		t.Fatal(err)
	}
	f := &vendFront{t: t, sts: sts}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = f.addCredentials
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		table := loadTablePath.MatchString(r.URL.Path)
		if table && r.Method == http.MethodPost && f.refusing(r.Context()) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"error":{"message":"Commit failed: refused by the realparts front","type":"CommitFailedException","code":409}}`))
			return
		}
		if table && r.Method == http.MethodGet {
			// The answer is rewritten: no compressed body.
			r.Header.Del("Accept-Encoding")
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// refusing reports whether a commit is to be refused, revoking the
// credentials in use at the first refusal.
func (f *vendFront) refusing(ctx context.Context) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.refuseCommits {
		return false
	}
	f.refused++
	if f.refused == 1 && f.current != nil {
		if err := f.sts.revoke(ctx, f.current.gen); err != nil {
			f.t.Errorf("revoke at the refused commit: %v", err)
		}
		f.current = nil
	}
	return true
}

// addCredentials puts the current credentials into a LoadTable answer's
// config when the request asked for vended credentials.
func (f *vendFront) addCredentials(resp *http.Response) error {
	r := resp.Request
	if r.Method != http.MethodGet || !loadTablePath.MatchString(r.URL.Path) || resp.StatusCode != http.StatusOK {
		return nil
	}
	f.mu.Lock()
	f.asked++
	f.mu.Unlock()
	if !strings.Contains(r.Header.Get("X-Iceberg-Access-Delegation"), "vended-credentials") {
		return nil
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	var answer map[string]json.RawMessage
	if err := json.Unmarshal(data, &answer); err != nil {
		return fmt.Errorf("vend front: LoadTable answer: %w", err)
	}
	c, err := f.credentials(r.Context())
	if err != nil {
		return err
	}
	config := map[string]string{}
	if raw, ok := answer["config"]; ok {
		_ = json.Unmarshal(raw, &config)
	}
	config["s3.access-key-id"] = c.accessKey
	config["s3.secret-access-key"] = c.secret
	config["s3.session-token"] = c.tok
	config["s3.session-token-expires-at-ms"] = strconv.FormatInt(c.expires.UnixMilli(), 10)
	if answer["config"], err = json.Marshal(config); err != nil {
		return err
	}
	if data, err = json.Marshal(answer); err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = int64(len(data))
	resp.Header.Set("Content-Length", strconv.Itoa(len(data)))
	resp.Header.Del("Content-Encoding")
	return nil
}

// credentials are the current generation, issued when there is none.
func (f *vendFront) credentials(ctx context.Context) (vended, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loads++
	if f.current == nil {
		c, err := f.sts.assumeRole(ctx, len(f.issued)+1)
		if err != nil {
			return vended{}, err
		}
		f.current = &c
		f.issued = append(f.issued, c)
	}
	return *f.current, nil
}

// revokeCurrent revokes the credentials in use; the next LoadTable gets
// new ones.
func (f *vendFront) revokeCurrent(ctx context.Context, accessKey string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.current == nil || f.current.accessKey != accessKey {
		return false, nil
	}
	if err := f.sts.revoke(ctx, f.current.gen); err != nil {
		return false, err
	}
	f.current = nil
	return true, nil
}

func (f *vendFront) setRefuseCommits(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuseCommits = on
}

func (f *vendFront) state() (issued []vended, loads, asked, refused int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]vended(nil), f.issued...), f.loads, f.asked, f.refused
}

// s3Watch passes reactor's S3 requests to the real MinIO unchanged
// (signatures included: the Host header is kept) and notes what MinIO
// answered. Armed, it has the front revoke the credentials as reactor
// writes its first output file with them, just before MinIO sees that
// request: a revocation in the middle of a compaction, at a known point.
type s3Watch struct {
	t     *testing.T
	srv   *httptest.Server
	front *vendFront

	mu          sync.Mutex
	armed       bool
	revoked     []string       // access keys revoked mid-job
	refusals    map[string]int // "METHOD code" of MinIO's 403s
	deletesOK   map[string]int // access key -> DELETEs answered 204
	lastRefusal string
	// written are the data files reactor wrote, in order (path-style
	// request paths: /bucket/key).
	written []string
}

var credentialOf = regexp.MustCompile(`Credential=([^/]+)/`)

func startS3Watch(t *testing.T, endpoint string, front *vendFront) *s3Watch {
	t.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	w := &s3Watch{t: t, front: front, refusals: map[string]int{}, deletesOK: map[string]int{}}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		key := accessKeyOf(resp.Request)
		switch {
		case resp.StatusCode == http.StatusForbidden:
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(data))
			var e struct {
				Code string `xml:"Code"`
			}
			_ = xml.Unmarshal(data, &e)
			w.mu.Lock()
			w.refusals[resp.Request.Method+" "+e.Code]++
			w.lastRefusal = resp.Request.Method + " " + resp.Request.URL.Path + ": " + e.Code
			w.mu.Unlock()
		case resp.Request.Method == http.MethodDelete && resp.StatusCode/100 == 2:
			w.mu.Lock()
			w.deletesOK[key]++
			w.mu.Unlock()
		case resp.Request.Method == http.MethodPut && resp.StatusCode == http.StatusOK &&
			strings.Contains(resp.Request.URL.Path, "/data/") && strings.HasSuffix(resp.Request.URL.Path, ".parquet"):
			w.mu.Lock()
			w.written = append(w.written, resp.Request.URL.Path)
			w.mu.Unlock()
		}
		return nil
	}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/data/") && strings.HasSuffix(r.URL.Path, ".parquet") {
			w.mu.Lock()
			armed := w.armed
			w.armed = false
			w.mu.Unlock()
			if armed {
				key := accessKeyOf(r)
				ok, err := front.revokeCurrent(r.Context(), key)
				if err != nil {
					t.Errorf("revoke mid-job: %v", err)
				}
				if ok {
					w.mu.Lock()
					w.revoked = append(w.revoked, key)
					w.mu.Unlock()
				}
			}
		}
		proxy.ServeHTTP(rw, r)
	}))
	t.Cleanup(w.srv.Close)
	return w
}

func accessKeyOf(r *http.Request) string {
	if m := credentialOf.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		return m[1]
	}
	return ""
}

// writtenUnder are the data files reactor wrote whose path holds part.
func (w *s3Watch) writtenUnder(part string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, p := range w.written {
		if strings.Contains(p, part) {
			out = append(out, p)
		}
	}
	return out
}

func (w *s3Watch) arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = true
}

func (w *s3Watch) counts() (revoked []string, refusals map[string]int, deletesOK map[string]int, last string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	refusals, deletesOK = map[string]int{}, map[string]int{}
	for k, v := range w.refusals {
		refusals[k] = v
	}
	for k, v := range w.deletesOK {
		deletesOK[k] = v
	}
	return append([]string(nil), w.revoked...), refusals, deletesOK, w.lastRefusal
}

// Scenario: `reactor run` with no storage credentials of its own, against
// the real REST catalog behind a front that vends real, revocable MinIO
// STS credentials in LoadTable's config. (1) As a compaction writes its
// first output, the credentials it holds are revoked at MinIO; MinIO
// refuses its next request, reactor loads the table's credentials again
// and the compaction finishes with them, rows exact. (2) A compaction
// whose commits the front refuses (after revoking the credentials at the
// first) gives up and deletes its outputs: MinIO refuses the first
// deletion, the cleanup renews and deletes, and no output is left. No
// credential appears in reactor's log.
func TestVendedCredentials(t *testing.T) {
	s := need(t)
	s.resetStreams(t)
	sts := &minioSTS{endpoint: s.s3Endpoint, hc: &http.Client{Timeout: 30 * time.Second}}
	front := startVendFront(t, s.catalogURI, sts)
	watch := startS3Watch(t, s.s3Endpoint, front)
	l := s.openLake(t, "vended", "events")
	l.createTable(nil)
	jobs := s.watchJobs(t, l.name)
	r := s.newReactor(t, scenarioThresholds("vended", "commit_retry_time: 3s"))
	r.extra = []string{
		"REACTOR_CATALOG_URI=" + front.srv.URL,
		"REACTOR_CATALOG_PROP=s3.endpoint=" + watch.srv.URL + ",s3.region=us-east-1,s3.force-virtual-addressing=false",
		// No storage credentials but the vended ones.
		"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_EC2_METADATA_DISABLED=true",
	}
	r.start()
	diag := func() string {
		issued, loads, asked, refused := front.state()
		revoked, refusals, deletes, last := watch.counts()
		return fmt.Sprintf("front: %d generations issued, %d of %d loads vended, %d commits refused; revoked mid-job %d; MinIO refusals %v (last %s); deletes %v\n%s%s",
			len(issued), loads, asked, refused, len(revoked), refusals, last, deletes, jobs.summary(), r.p.tail(60))
	}
	renewals := func() float64 {
		return r.metric("reactor_credential_renewals_total", map[string]string{"reason": "refused"})
	}
	w := streamwriter.New(l.cat, l.ident, nil)
	rows := newIDs()

	// (1) Revoked mid-compaction.
	watch.arm()
	for range 5 {
		rows.commit(t, w, "a", 10)
	}
	l.checkRows(w.Written())
	eventually(t, "the compaction whose credentials were revoked mid-job", 2*time.Minute,
		func() bool { return jobs.succeeded("compact") >= 1 }, diag)
	l.checkRows(w.Written())
	if f := jobs.failures(); len(f) > 0 {
		t.Fatalf("jobs failed:\n%s", diag())
	}
	revoked, refusals, _, _ := watch.counts()
	if len(revoked) != 1 || refusals["PUT InvalidAccessKeyId"] < 1 {
		t.Fatalf("want the credentials revoked as the first output was written and MinIO refusing the write; %s", diag())
	}
	if got := renewals(); got < 1 {
		t.Fatalf("reactor_credential_renewals_total{reason=refused} = %v after a refusal\n%s", got, diag())
	}
	if issued, _, _, _ := front.state(); len(issued) < 2 {
		t.Fatalf("no fresh credentials were vended after the revocation\n%s", diag())
	}
	if files := l.dataFiles()["a"]; len(files) != 1 {
		t.Errorf("partition a holds %d data files after its compaction, want 1: %v", len(files), files)
	}
	firstRenewals := renewals()

	// (2) A compaction that cannot commit cleans up with fresh credentials.
	front.setRefuseCommits(true)
	issuedBefore, _, _, _ := front.state()
	for range 5 {
		rows.commit(t, w, "b", 10)
	}
	eventually(t, "the compaction whose commits were refused to give up", 2*time.Minute, func() bool {
		for _, ev := range jobs.finished("compact") {
			if ev.Outcome == "gave_up" {
				return true
			}
		}
		return false
	}, diag)
	// The outputs the refused compaction wrote, before a later one (the
	// front accepts commits again) writes others.
	outputs := watch.writtenUnder("/data/category=b/")
	front.setRefuseCommits(false)
	if len(outputs) == 0 {
		t.Fatalf("the refused compaction wrote no output through the watch\n%s", diag())
	}
	for _, p := range outputs {
		bucket, key, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
		exists, err := s.objectExists(context.Background(), bucket, key)
		if err != nil {
			t.Fatal(err)
		}
		if exists {
			t.Errorf("output s3://%s/%s of the compaction that gave up is still in MinIO", bucket, key)
		}
	}
	_, refusals, deletes, _ := watch.counts()
	if refusals["DELETE InvalidAccessKeyId"] < 1 {
		t.Errorf("MinIO refused no deletion with the revoked credentials; the cleanup's renewal was not exercised\n%s", diag())
	}
	issued, _, _, _ := front.state()
	fresh := 0
	for _, c := range issued[len(issuedBefore):] {
		fresh += deletes[c.accessKey]
	}
	if fresh == 0 {
		t.Errorf("no deletion succeeded with credentials vended after the revocation\n%s", diag())
	}
	if got := renewals(); got <= firstRenewals {
		t.Errorf("reactor_credential_renewals_total{reason=refused} stayed at %v through the cleanup\n%s", got, diag())
	}
	l.checkRows(w.Written())

	logs := r.logs()
	for _, c := range issued {
		if strings.Contains(logs, c.secret) || strings.Contains(logs, c.tok) {
			t.Errorf("a vended secret key or session token is in reactor's log")
		}
	}
	if !strings.Contains(logs, `"msg":"storage credentials renewed"`) || !strings.Contains(logs, `"reason":"refused"`) {
		t.Errorf("reactor logged no renewal\n%s", diag())
	}
	t.Logf("generations vended %d; MinIO refusals %v; deletes by key %v", len(issued), refusals, deletes)
	r.stop()
}
