// Command hello prints its arguments: the program the tests of testbin
// build.
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() { fmt.Println("hello", strings.Join(os.Args[1:], " ")) }
