package credential

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
)

// VerifiedFor is how long a password verified by logging in is trusted.
const VerifiedFor = 10 * time.Minute

// Verified remembers, by digest, the password last verified for each role,
// so an admin that cannot read verifiers (not a superuser) does not log in
// as every role at every poll. An entry expires after VerifiedFor, so a
// password changed on the server by hand is found and set back within
// that time. The zero value is ready to use.
type Verified struct {
	mu  sync.Mutex
	m   map[types.UID]verified
	now func() time.Time
}

type verified struct {
	digest [32]byte
	at     time.Time
}

func (v *Verified) clock() time.Time {
	if v.now != nil {
		return v.now()
	}
	return time.Now()
}

// Set remembers pw as the role's verified password.
func (v *Verified) Set(uid types.UID, pw string) {
	if pw == "" {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = map[types.UID]verified{}
	}
	v.m[uid] = verified{digest: sha256.Sum256([]byte(pw)), at: v.clock()}
}

// Is reports whether pw was verified for the role less than VerifiedFor
// ago.
func (v *Verified) Is(uid types.UID, pw string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	d, ok := v.m[uid]
	return ok && v.clock().Sub(d.at) < VerifiedFor && d.digest == sha256.Sum256([]byte(pw))
}

// Forget drops what is remembered of the role.
func (v *Verified) Forget(uid types.UID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.m, uid)
}

// Works reports whether the server holds pw as the role's password. With
// the stored verifier at hand (the observation read it: a superuser admin)
// it is recomputed, no login needed; otherwise a password verified once is
// remembered by its digest, and a new one is checked by logging in
// (logIn, which fails with postgres.ErrPasswordRejected when the server
// refuses the password).
func (v *Verified) Works(ctx context.Context, uid types.UID, got *postgres.ObservedRole, pw string, logIn func(context.Context) error) (bool, error) {
	if got.VerifierRead {
		return postgres.VerifierMatches(got.Verifier, pw), nil
	}
	if v.Is(uid, pw) {
		return true, nil
	}
	if err := logIn(ctx); err != nil {
		if errors.Is(err, postgres.ErrPasswordRejected) {
			return false, nil
		}
		return false, errors.Wrap(err, "cannot log in as the role to check its password")
	}
	v.Set(uid, pw)
	return true, nil
}
