//go:build !race

package interval

const raceEnabled = false
