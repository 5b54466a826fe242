package testenv

import "testing"

func TestRequired(t *testing.T) {
	for _, tc := range []struct {
		ci, optIn string
		want      bool
	}{
		{"", "", false},
		{"true", "", true},
		{"", "1", true},
		{"false", "0", false},
	} {
		t.Setenv("CI", tc.ci)
		t.Setenv(DB, tc.optIn)
		if got := Required(DB); got != tc.want {
			t.Errorf("CI=%q %s=%q: Required = %v, want %v", tc.ci, DB, tc.optIn, got, tc.want)
		}
	}
}
