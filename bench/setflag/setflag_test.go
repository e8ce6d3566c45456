package setflag

import "testing"

func TestFlag(t *testing.T) {
	var f Flag
	for _, bad := range []string{"cooldown", "=1s", " =1s"} {
		if err := f.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
	for _, good := range []string{"cooldown=1s", " quiet_period = 2s ", "cooldown=3s"} {
		if err := f.Set(good); err != nil {
			t.Errorf("Set(%q): %v", good, err)
		}
	}
	m := map[string]string{"small_file_count": "5", "cooldown": "9s"}
	f.Apply(m)
	want := "  cooldown: 3s\n  quiet_period: 2s\n  small_file_count: 5\n"
	if got := DefaultsYAML(m); got != want {
		t.Errorf("DefaultsYAML = %q, want %q", got, want)
	}
}
