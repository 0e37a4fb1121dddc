// Package semver is an example plugin in Go: Semantic Versioning 2.0.0
// (https://semver.org) tools.
//
//   - semver_compare: which of two versions has precedence.
//   - semver_sort: sorts versions by precedence.
//   - semver_bump: the next major, minor or patch version.
//
// Build: `cargo xtask guests semver-go`.
package semver

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"toolhost/guest"
)

// The grammar from semver.org, with an optional leading `v`.
var pattern = regexp.MustCompile(`^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

type version struct {
	major, minor, patch uint64
	pre                 []string
	build               string
}

func parse(text string) (version, error) {
	m := pattern.FindStringSubmatch(strings.TrimSpace(text))
	if m == nil {
		return version{}, guest.Invalid("%q is not a semantic version (MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD])", text)
	}
	var v version
	for i, field := range []*uint64{&v.major, &v.minor, &v.patch} {
		n, err := strconv.ParseUint(m[i+1], 10, 64)
		if err != nil {
			return version{}, guest.Invalid("%q: a number is too large", text)
		}
		*field = n
	}
	if m[4] != "" {
		v.pre = strings.Split(m[4], ".")
	}
	v.build = m[5]
	return v, nil
}

func (v version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.major, v.minor, v.patch)
	if len(v.pre) > 0 {
		s += "-" + strings.Join(v.pre, ".")
	}
	if v.build != "" {
		s += "+" + v.build
	}
	return s
}

// compare orders by precedence (semver.org, item 11); build metadata is ignored.
func compare(a, b version) int {
	for _, c := range [][2]uint64{{a.major, b.major}, {a.minor, b.minor}, {a.patch, b.patch}} {
		if c[0] != c[1] {
			if c[0] < c[1] {
				return -1
			}
			return 1
		}
	}
	// A pre-release has lower precedence than the release.
	switch {
	case len(a.pre) == 0 && len(b.pre) == 0:
		return 0
	case len(a.pre) == 0:
		return 1
	case len(b.pre) == 0:
		return -1
	}
	for i := 0; i < len(a.pre) && i < len(b.pre); i++ {
		if c := compareIdentifier(a.pre[i], b.pre[i]); c != 0 {
			return c
		}
	}
	return compareInt(len(a.pre), len(b.pre))
}

// compareIdentifier: numeric identifiers compare as numbers and below
// alphanumeric ones, which compare in ASCII order.
func compareIdentifier(a, b string) int {
	an, aErr := strconv.ParseUint(a, 10, 64)
	bn, bErr := strconv.ParseUint(b, 10, 64)
	switch {
	case aErr == nil && bErr == nil:
		if an == bn {
			return 0
		}
		if an < bn {
			return -1
		}
		return 1
	case aErr == nil:
		return -1
	case bErr == nil:
		return 1
	}
	return strings.Compare(a, b)
}

func compareInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func semverCompare(_ *guest.Context, raw json.RawMessage) (any, error) {
	var args struct{ A, B string }
	if err := guest.Decode(raw, &args); err != nil {
		return nil, err
	}
	a, err := parse(args.A)
	if err != nil {
		return nil, err
	}
	b, err := parse(args.B)
	if err != nil {
		return nil, err
	}
	order := compare(a, b)
	relation := map[int]string{-1: "older", 0: "equal", 1: "newer"}[order]
	return map[string]any{"order": order, "a_is": relation}, nil
}

func semverSort(_ *guest.Context, raw json.RawMessage) (any, error) {
	var args struct {
		Versions   []string
		Descending bool // false when missing or null
	}
	if err := guest.Decode(raw, &args); err != nil {
		return nil, err
	}
	type entry struct {
		text string
		v    version
	}
	entries := make([]entry, 0, len(args.Versions))
	for _, text := range args.Versions {
		v, err := parse(text)
		if err != nil {
			return nil, err
		}
		entries = append(entries, entry{text, v})
	}
	slices.SortStableFunc(entries, func(a, b entry) int {
		if args.Descending {
			return compare(b.v, a.v)
		}
		return compare(a.v, b.v)
	})
	sorted := make([]string, len(entries))
	for i, e := range entries {
		sorted[i] = e.text
	}
	return map[string]any{"sorted": sorted}, nil
}

func semverBump(_ *guest.Context, raw json.RawMessage) (any, error) {
	// The default; a null `part` leaves it (optional means nullable).
	args := struct{ Version, Part string }{Part: "patch"}
	if err := guest.Decode(raw, &args); err != nil {
		return nil, err
	}
	v, err := parse(args.Version)
	if err != nil {
		return nil, err
	}
	prerelease := len(v.pre) > 0
	switch args.Part {
	case "major":
		// 2.0.0-rc.1 bumps to its release 2.0.0, not to 3.0.0.
		if !prerelease || v.minor != 0 || v.patch != 0 {
			v.major++
		}
		v.minor, v.patch = 0, 0
	case "minor":
		if !prerelease || v.patch != 0 {
			v.minor++
		}
		v.patch = 0
	default:
		if !prerelease {
			v.patch++
		}
	}
	v.pre, v.build = nil, ""
	return map[string]any{"version": v.String()}, nil
}

func init() {
	guest.Register(
		guest.Tool{
			Name: "semver_compare",
			Description: "Compares two semantic versions by precedence (semver.org): " +
				"`order` is -1, 0 or 1 as `a` is older than, equal to or newer than `b`. " +
				"Pre-releases come before their release; build metadata is ignored.",
			InputSchema: `{
				"type": "object",
				"required": ["a", "b"],
				"properties": {
					"a": {"type": "string", "description": "A version, e.g. 1.2.3-rc.1."},
					"b": {"type": "string", "description": "The version to compare it with."}
				}
			}`,
			Run: semverCompare,
		},
		guest.Tool{
			Name:        "semver_sort",
			Description: "Sorts semantic versions by precedence, oldest first unless `descending`.",
			InputSchema: `{
				"type": "object",
				"required": ["versions"],
				"properties": {
					"versions": {"type": "array", "items": {"type": "string"},
						"description": "The versions to sort."},
					"descending": {"type": ["boolean", "null"], "default": false,
						"description": "Newest first. Defaults to ` + "`false`" + `."}
				}
			}`,
			Run: semverSort,
		},
		guest.Tool{
			Name: "semver_bump",
			Description: "The next version after a release of the given kind: " +
				"1.4.2 → 2.0.0 (major), 1.5.0 (minor), 1.4.3 (patch). " +
				"A pre-release bumps to its own release where that is the next one (2.0.0-rc.1 → 2.0.0).",
			InputSchema: `{
				"type": "object",
				"required": ["version"],
				"properties": {
					"version": {"type": "string", "description": "The current version."},
					"part": {"type": ["string", "null"], "enum": ["major", "minor", "patch", null],
						"default": "patch", "description": "Which part to bump. Defaults to ` + "`patch`" + `."}
				}
			}`,
			Run: semverBump,
		},
	)
}
