package scenarios

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"

	"github.com/goccy/go-yaml"
)

// settings is realparts/settings.yaml: what the suite runs MinIO, the REST
// catalog and reactor with, and what docker-compose.yml must use too.
type settings struct {
	MinIO struct {
		Env          map[string]string `yaml:"env"`
		Bucket       string            `yaml:"bucket"`
		Notification struct {
			ARN    string   `yaml:"arn"`
			Events []string `yaml:"events"`
		} `yaml:"notification"`
	} `yaml:"minio"`
	REST struct {
		Env map[string]string `yaml:"env"`
	} `yaml:"rest"`
	Reactor struct {
		Env    map[string]string `yaml:"env"`
		RunEnv map[string]string `yaml:"run_env"`
	} `yaml:"reactor"`
}

// settingsFile is realparts/settings.yaml; go test runs in
// realparts/scenarios.
const settingsFile = "../settings.yaml"

func loadSettings() (settings, error) {
	var s settings
	data, err := os.ReadFile(settingsFile)
	if err != nil {
		return s, err
	}
	if err := yaml.UnmarshalWithOptions(data, &s, yaml.Strict()); err != nil {
		return s, fmt.Errorf("%s: %w", filepath.Clean(settingsFile), err)
	}
	if len(s.MinIO.Env) == 0 || len(s.REST.Env) == 0 || len(s.Reactor.Env) == 0 || s.MinIO.Bucket == "" ||
		s.MinIO.Notification.ARN == "" || len(s.MinIO.Notification.Events) == 0 {
		return s, fmt.Errorf("%s: minio.env, minio.bucket, minio.notification, rest.env and reactor.env are required", settingsFile)
	}
	return s, nil
}

var placeholder = regexp.MustCompile(`\{([^{}]+)\}`)

// render fills the placeholders of every value of env from vars, failing on
// a placeholder vars lacks: a setting the suite did not fill would reach a
// server as literal braces.
func render(env map[string]string, vars map[string]string) ([]string, error) {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v := env[k]
		var missing []string
		v = placeholder.ReplaceAllStringFunc(v, func(m string) string {
			name := m[1 : len(m)-1]
			val, ok := vars[name]
			if !ok {
				missing = append(missing, name)
			}
			return val
		})
		if len(missing) > 0 {
			sort.Strings(missing)
			return nil, fmt.Errorf("setting %s: no value for placeholder(s) %v", k, missing)
		}
		out = append(out, k+"="+v)
	}
	return out, nil
}
