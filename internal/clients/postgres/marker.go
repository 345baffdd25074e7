package postgres

import "strings"

// The ownership marker ends the comment of every object the provider
// creates, so that an object of the same name that the provider did not
// create is never mistaken for one it did.
const markerPrefix = "[provider-postgresql uid="

// WithMarker returns comment with the ownership marker of uid appended.
func WithMarker(comment, uid string) string {
	m := markerPrefix + uid + "]"
	if comment == "" {
		return m
	}
	return comment + "\n" + m
}

// ParseMarker splits a stored comment into the user's comment and the UID
// of the marker it ends with ("" when there is none).
func ParseMarker(stored string) (comment, uid string) {
	i := strings.LastIndex(stored, markerPrefix)
	if i < 0 || !strings.HasSuffix(stored, "]") {
		return stored, ""
	}
	uid = stored[i+len(markerPrefix) : len(stored)-1]
	return strings.TrimSuffix(stored[:i], "\n"), uid
}
