package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// ReadProfileJSON reads a resolved profile as this version writes it (a
// kube run's profile.json, run.json's profile): every key known, or an
// error naming the one that is not. It is not validated here.
func ReadProfileJSON(path string) (Profile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Profile{}, err
	}
	q := DefaultProfile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		return Profile{}, fmt.Errorf("not a profile of this version: %v", err)
	}
	return q, nil
}
