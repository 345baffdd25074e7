package seal

import (
	"bytes"
	"testing"
)

func TestVerify(t *testing.T) {
	k, err := NewKey(bytes.Repeat([]byte{7}, keySize))
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewKey(bytes.Repeat([]byte{8}, keySize))
	if err != nil {
		t.Fatal(err)
	}
	id := Identity{Kind: "PostgreSQLDatabase", Namespace: "team-a", Name: "orders", Object: "orders"}
	s := k.Of(id, "uid-1")
	cases := map[string]struct {
		key  *Key
		seal string
		id   Identity
		uid  string
		want bool
	}{
		"SameIdentity":          {key: k, seal: s, id: id, uid: "uid-1", want: true},
		"OtherNamespace":        {key: k, seal: s, id: Identity{Kind: id.Kind, Namespace: "team-b", Name: id.Name, Object: id.Object}, uid: "uid-1"},
		"OtherName":             {key: k, seal: s, id: Identity{Kind: id.Kind, Namespace: id.Namespace, Name: "orders2", Object: id.Object}, uid: "uid-1"},
		"OtherKind":             {key: k, seal: s, id: Identity{Kind: "PostgreSQLRole", Namespace: id.Namespace, Name: id.Name, Object: id.Object}, uid: "uid-1"},
		"OtherObject":           {key: k, seal: s, id: Identity{Kind: id.Kind, Namespace: id.Namespace, Name: id.Name, Object: "orders_v2"}, uid: "uid-1"},
		"ObjectInOtherDatabase": {key: k, seal: s, id: Identity{Kind: id.Kind, Namespace: id.Namespace, Name: id.Name, Database: "x", Object: id.Object}, uid: "uid-1"},
		"OtherOrigin":           {key: k, seal: s, id: Identity{Kind: id.Kind, Namespace: id.Namespace, Name: id.Name, Object: id.Object, Origin: "binding-2"}, uid: "uid-1"},
		"OtherUID":              {key: k, seal: s, id: id, uid: "uid-2"},
		"OtherKey":              {key: other, seal: s, id: id, uid: "uid-1"},
		"NoKey":                 {key: nil, seal: s, id: id, uid: "uid-1"},
		"NoSeal":                {key: k, seal: "", id: id, uid: "uid-1"},
		// Fields run together must not collide: "ab"+"c" is not "a"+"bc".
		"ShiftedFields": {key: k, seal: k.Of(Identity{Kind: "a", Namespace: "bc"}, "u"), id: Identity{Kind: "ab", Namespace: "c"}, uid: "u"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.key.Verify(tc.seal, tc.id, tc.uid); got != tc.want {
				t.Errorf("Verify() = %v, want %v", got, tc.want)
			}
		})
	}
	if got := (*Key)(nil).Of(id, "uid-1"); got != "" {
		t.Errorf("a nil Key sealed %q", got)
	}
}

func TestNewKeyRefusesShortKeys(t *testing.T) {
	if _, err := NewKey(make([]byte, keySize-1)); err == nil {
		t.Error("NewKey accepted a key shorter than 32 bytes")
	}
}
