// Command errdetails writes the FileDescriptorSet of google/rpc/error_details.proto
// (and what it imports), as compiled into the genproto module askpoint builds
// with, so that protoc --descriptor_set_in can generate a Python module for a
// conformance-suite environment whose own copy of the file is too old to hold
// google.rpc.ErrorInfo. See docs/CONFORMANCE.md.
package main

import (
	"fmt"
	"os"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: errdetails OUT.pb")
		os.Exit(2)
	}
	set := &descriptorpb.FileDescriptorSet{}
	seen := map[string]bool{}
	var add func(f protoreflect.FileDescriptor)
	add = func(f protoreflect.FileDescriptor) {
		if seen[f.Path()] {
			return
		}
		seen[f.Path()] = true
		imps := f.Imports()
		for i := 0; i < imps.Len(); i++ {
			add(imps.Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(f))
	}
	add(errdetails.File_google_rpc_error_details_proto)
	b, err := proto.Marshal(set)
	if err == nil {
		err = os.WriteFile(os.Args[1], b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "errdetails:", err)
		os.Exit(1)
	}
}
