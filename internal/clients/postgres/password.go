package postgres

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// GeneratedPasswordLength is the length of generated passwords: 40
// characters of 62 give about 238 bits.
const GeneratedPasswordLength = 40

const (
	passwordAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	scramIterations  = 4096
	scramSaltLength  = 16
)

// ErrPasswordNotASCII is returned for a password with characters outside
// printable ASCII. Such a password would need SASLprep normalisation, which
// this provider does not do: it refuses the password rather than store a
// verifier the server's own normalisation could disagree with.
var ErrPasswordNotASCII = errors.New("the password holds characters outside printable ASCII, which would need SASLprep normalisation; use printable ASCII")

// GeneratePassword returns a random password of GeneratedPasswordLength
// letters and digits: safe in URIs and connection strings without escaping.
func GeneratePassword() (string, error) {
	b := make([]byte, GeneratedPasswordLength)
	max := big.NewInt(int64(len(passwordAlphabet)))
	for i := range b {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", errors.Wrap(err, "cannot generate a password")
		}
		b[i] = passwordAlphabet[n.Int64()]
	}
	return string(b), nil
}

// SCRAMVerifier returns the SCRAM-SHA-256 verifier PostgreSQL stores for a
// password, computed here so that the password itself never reaches the
// server (nor its logs): `PASSWORD 'SCRAM-SHA-256$…'` is stored as given.
func SCRAMVerifier(password string) (string, error) {
	salt := make([]byte, scramSaltLength)
	if _, err := rand.Read(salt); err != nil {
		return "", errors.Wrap(err, "cannot generate a salt")
	}
	return scramVerifier(password, salt, scramIterations)
}

func scramVerifier(password string, salt []byte, iterations int) (string, error) {
	for _, r := range password {
		if r < 0x20 || r > 0x7e {
			return "", ErrPasswordNotASCII
		}
	}
	if password == "" {
		return "", errors.New("the password is empty")
	}
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		return "", errors.Wrap(err, "cannot derive the salted password")
	}
	clientKey := hmacSHA256(salted, "Client Key")
	storedKey := sha256.Sum256(clientKey)
	serverKey := hmacSHA256(salted, "Server Key")
	enc := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations, enc(salt), enc(storedKey[:]), enc(serverKey)), nil
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// VerifierMatches reports whether a stored SCRAM-SHA-256 verifier is that of
// password. It recomputes the verifier with the stored salt and iteration
// count; anything that is not a well-formed SCRAM-SHA-256 verifier (an MD5
// hash, no password) does not match.
func VerifierMatches(stored, password string) bool {
	rest, ok := strings.CutPrefix(stored, "SCRAM-SHA-256$")
	if !ok {
		return false
	}
	iterSalt, _, ok := strings.Cut(rest, "$")
	if !ok {
		return false
	}
	iterText, saltB64, ok := strings.Cut(iterSalt, ":")
	if !ok {
		return false
	}
	iterations, err := strconv.Atoi(iterText)
	if err != nil || iterations <= 0 || iterations > 1<<20 {
		return false
	}
	salt, err := base64.StdEncoding.DecodeString(saltB64)
	if err != nil {
		return false
	}
	got, err := scramVerifier(password, salt, iterations)
	return err == nil && hmac.Equal([]byte(got), []byte(stored))
}
