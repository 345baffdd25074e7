package controller

import (
	"reflect"
	"runtime"
	"strings"
)

// ControllerPackages returns, for each kind, the packages (module-relative)
// of the functions that set up its controllers: the registration, read
// from the code rather than kept in a second list.
func ControllerPackages(module string) map[string][]string {
	out := map[string][]string{}
	for _, c := range controllers {
		fn := runtime.FuncForPC(reflect.ValueOf(c.setup).Pointer()).Name()
		// "github.com/.../internal/controller/role.Setup": the package is
		// everything before the dot after the last slash.
		slash := strings.LastIndex(fn, "/")
		pkg := fn[:slash+strings.Index(fn[slash:], ".")]
		out[c.kind] = append(out[c.kind], strings.TrimPrefix(pkg, module))
	}
	return out
}
