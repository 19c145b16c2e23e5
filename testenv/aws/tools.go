//go:build tools

// The AWS provider's controller, built by testenv/aws-controller from this module (so its
// dependencies are pinned in go.sum with the harness's).
package tools

import _ "github.com/aws/karpenter-provider-aws/cmd/controller"
