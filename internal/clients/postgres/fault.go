package postgres

import (
	"os"
	"strconv"
	"sync/atomic"
	"syscall"

	xperrors "github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// KillBeforeEnv names the variable that arms the crash hook: set to N, the
// process kills itself with SIGKILL, as an OOM kill or a lost node ends a
// provider, just before it sends its Nth statement that changes something
// (reads, session settings and transaction control are not counted; every
// statement of a transaction is, so the kill may fall inside one). Tests
// use it to prove that a provider killed between any two statements of a
// create leaves nothing for a person. A provider as shipped leaves it
// unset, and then counts nothing.
const KillBeforeEnv = "PROVIDER_POSTGRESQL_KILL_BEFORE_STATEMENT"

// killBefore is the statement the process dies before, 0 for none; sent
// counts the statements so far while it is armed.
var killBefore, sent atomic.Int64

// ArmKillBefore arms the crash hook from the value of KillBeforeEnv ("" or
// "0" leaves it off).
func ArmKillBefore(value string) error {
	if value == "" {
		return nil
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil || n < 0 {
		return xperrors.Errorf("%s=%q: want the number of the statement to die before", KillBeforeEnv, value)
	}
	killBefore.Store(n)
	return nil
}

// beforeStatement is called before every statement that changes
// something; armed, it ends the process before the chosen one.
func beforeStatement() {
	n := killBefore.Load()
	if n == 0 || sent.Add(1) != n {
		return
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // The signal is delivered before anything else runs.
}
