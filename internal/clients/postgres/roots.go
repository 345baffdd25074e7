package postgres

import (
	"crypto/sha256"
	"crypto/x509"
	"sync"
)

// maxRoots bounds the parsed CA bundles kept: one per Instance's bundle in
// use, and a rotated bundle's old one until the set is cleared.
const maxRoots = 64

// A rootsCache hands every pool of the same CA bundle one parsed CertPool.
// Each pool's configuration parsed its Instance's bundle anew, and a
// provider keeps a pool per database in use: at 5,000 objects a thousand
// copies of the same certificates were a tenth of the live heap
// (docs/performance.md). A CertPool is only read once built, so sharing it
// between goroutines is safe.
type rootsCache struct {
	mu    sync.Mutex
	pools map[[sha256.Size]byte]*x509.CertPool
}

var roots = &rootsCache{pools: map[[sha256.Size]byte]*x509.CertPool{}}

// get returns the CertPool of the certificates in pem, parsed once per
// content, or nil when pem holds none.
func (c *rootsCache) get(pem []byte) *x509.CertPool {
	key := sha256.Sum256(pem)
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.pools[key]; ok {
		return p
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pem) {
		return nil
	}
	if len(c.pools) >= maxRoots {
		clear(c.pools)
	}
	c.pools[key] = p
	return p
}
