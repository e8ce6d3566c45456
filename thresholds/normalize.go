package thresholds

import "reflect"

// nilEmptySlices sets every empty slice reachable from v (through pointers,
// structs and slice elements) to nil. The YAML decoder leaves an empty,
// non-nil slice for `key: []` and nil for an absent key; a config must not
// depend on which spelling the user chose, or a marshal round trip would
// change it. Walking every field, rather than naming the lists, keeps a
// list added later from reintroducing the difference.
func nilEmptySlices(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			nilEmptySlices(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				nilEmptySlices(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			if !v.IsNil() && v.CanSet() {
				v.Set(reflect.Zero(v.Type()))
			}
			return
		}
		for i := range v.Len() {
			nilEmptySlices(v.Index(i))
		}
	case reflect.Map:
		// No maps in Config today; map values are not addressable, so a
		// map added later must be normalized where it is declared.
	}
}
