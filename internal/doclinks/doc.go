// Package doclinks holds the tests that every link of the project's Markdown files, and every
// docs path a Go comment names, leads to a file (and heading) that exists, and that every Go
// name a comment names (schemas.Kind, or an unqualified name with a hump) is declared in the tree.
package doclinks
