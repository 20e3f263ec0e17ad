package capture

import (
	"reflect"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// The config file's capture block (schemas.CaptureOptions, the file contract) and the options a
// user sets (Options: flags and the workers' JSON) are two declarations of the same options,
// joined by their JSON keys in resolve. TestResolveTakesEveryCaptureOption keeps them from
// drifting apart: a key of the capture block that resolve does not carry into the options, or
// that a flag does not override, fails it.
func TestResolveTakesEveryCaptureOption(t *testing.T) {
	const flag = 3 // flags get values of their own: option i is flag·(i+1) (the config's: i+1)
	var co schemas.CaptureOptions
	cv := reflect.ValueOf(&co).Elem()
	for i := range cv.NumField() {
		setNonZero(t, cv.Field(i), int64(i+1), cv.Type().Field(i).Name)
	}
	co.Shards = 0 // a sharded config needs --shard i/n (TestResolveShardsFromConfig)
	rc := &schemas.Config{Target: schemas.Target{URL: "http://127.0.0.1:9"}, Capture: co}

	fromConfig, fromFlags := Config{}, Config{}
	ov := reflect.ValueOf(&fromFlags.Options).Elem()
	for i := range ov.NumField() {
		setNonZero(t, ov.Field(i), int64(flag*(i+1)), ov.Type().Field(i).Name)
	}
	fromFlags.Workers = flag
	*fromFlags.ReadCoalesce = MaxReadCoalesce // at most that: a flag-only option, not in the capture block
	flags := fromFlags.Options
	for _, cfg := range []*Config{&fromConfig, &fromFlags} {
		if err := resolve(cfg, rc); err != nil {
			t.Fatalf("resolve: %v", err)
		}
	}

	for i := range cv.NumField() {
		key := jsonKey(cv.Type().Field(i))
		conf := cv.Field(i)
		gotConf, gotFlag := optionByKey(t, &fromConfig, key), optionByKey(t, &fromFlags, key)
		wantFlag := optionByKey(t, &Config{Options: flags, Workers: flag}, key)
		switch {
		case key == "shards":
			continue
		case !gotConf.IsValid():
			t.Errorf("capture.%s: no option with JSON key %q takes it (Options or Config.Workers)", key, key)
		case !sameValue(gotConf, conf):
			t.Errorf("resolve(capture.%s = %v) gives the option %v; want the config's value", key, conf, gotConf)
		case !sameValue(gotFlag, wantFlag):
			t.Errorf("resolve(capture.%s = %v, flag %v) gives %v; want the flag's value", key, conf, wantFlag, gotFlag)
		}
	}
}

// optionByKey is cfg's option with the JSON key key (Config.Workers for "workers"), or the zero
// Value when there is none.
func optionByKey(t *testing.T, cfg *Config, key string) reflect.Value {
	t.Helper()
	if key == "workers" {
		return reflect.ValueOf(cfg.Workers)
	}
	ov := reflect.ValueOf(&cfg.Options).Elem()
	for i := range ov.NumField() {
		if jsonKey(ov.Type().Field(i)) == key {
			return ov.Field(i)
		}
	}
	return reflect.Value{}
}

func jsonKey(f reflect.StructField) string {
	key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return key
}

// setNonZero sets v, an int, bool, duration or byte count (or a pointer to one), to a value
// made from n > 0.
func setNonZero(t *testing.T, v reflect.Value, n int64, name string) {
	t.Helper()
	if v.Kind() == reflect.Pointer {
		v.Set(reflect.New(v.Type().Elem()))
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		if name == "GOMAXPROCS" { // a count of Ps, bounded by MaxGOMAXPROCS
			v.SetInt(min(n, MaxGOMAXPROCS))
			return
		}
		v.SetInt(n * 1_000_000_000) // whole seconds, whole MB: valid for every other option
	default:
		t.Fatalf("%s: setNonZero does not know kind %s", name, v.Kind())
	}
}

// sameValue reports whether a and b, of kinds setNonZero knows (types may differ:
// schemas.Duration and time.Duration), hold the same value.
func sameValue(a, b reflect.Value) bool {
	if a.Kind() == reflect.Bool || b.Kind() == reflect.Bool {
		return a.Kind() == b.Kind() && a.Bool() == b.Bool()
	}
	return a.Int() == b.Int()
}
