package objectio

import (
	"errors"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"google.golang.org/api/googleapi"
)

// s3CredentialCodes are the S3 error codes that say the request's
// credentials are no longer good (expired, revoked, or not yet known to
// the store), as opposed to a refusal of what the credentials may do.
// AccessDenied is one of them only when its message says the token
// expired (some S3-compatible stores answer an expired session token so).
var s3CredentialCodes = map[string]bool{
	"ExpiredToken":          true,
	"ExpiredTokenException": true,
	"InvalidAccessKeyId":    true,
	"InvalidToken":          true,
	"TokenRefreshRequired":  true,
	"InvalidClientTokenId":  true,
}

// azureCredentialCodes are Azure Storage's error codes for a credential
// (SAS or OAuth token) the store did not accept; AuthorizationFailure and
// AuthorizationPermissionMismatch (what the credential may do) are not.
var azureCredentialCodes = map[string]bool{
	"AuthenticationFailed":       true,
	"InvalidAuthenticationInfo":  true,
	"ExpiredAuthenticationToken": true,
}

// CredentialsRefused reports whether err is a store's answer that the
// request's credentials were expired, revoked or unknown: what a renewal
// of vended credentials can cure. A refusal of a permission (S3
// AccessDenied without an expiry, a GCS 403 forbidden, Azure's
// AuthorizationPermissionMismatch) is not: fresh credentials of the same
// principal would be refused the same way.
func CredentialsRefused(err error) bool {
	if err == nil {
		return false
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code := ae.ErrorCode()
		if s3CredentialCodes[code] {
			return true
		}
		if code == "AccessDenied" {
			return strings.Contains(strings.ToLower(ae.ErrorMessage()), "expired")
		}
		// A HEAD's answer has no body, so no code: the SDK names a 403
		// "Forbidden" whatever the reason. It may be credentials revoked
		// since the job began; a permission refused costs one reload and
		// one retry, as any refusal.
		if code == "Forbidden" {
			return true
		}
		// A 401 with no code the SDK could read (a HEAD's answer has no
		// body) is about credentials all the same.
		var re *smithyhttp.ResponseError
		return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusUnauthorized
	}
	var g *googleapi.Error
	if errors.As(err, &g) {
		if g.Code == http.StatusUnauthorized {
			return true
		}
		if g.Code == http.StatusForbidden {
			for _, item := range g.Errors {
				if item.Reason == "authError" || item.Reason == "expired" {
					return true
				}
			}
		}
		return false
	}
	var az *azcore.ResponseError
	if errors.As(err, &az) {
		return az.StatusCode == http.StatusUnauthorized || azureCredentialCodes[az.ErrorCode]
	}
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusUnauthorized
}
