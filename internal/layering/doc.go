// Package layering holds the test of the import rule: a stage imports only what lies below it
// (schemas at the bottom), so that a stage can be read, tested and replaced alone.
package layering
