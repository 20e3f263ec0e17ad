package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/wirebench/wirebench/internal/redact"
)

// The environment S3 reads, as the AWS CLI and SDKs read it. Credentials come from
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, else ~/.aws/credentials
// (AWS_PROFILE), else the instance's or pod's role (EC2/ECS metadata, EKS IRSA's
// AWS_WEB_IDENTITY_TOKEN_FILE). Secrets are never logged or written: messages name the
// variables, never their values.
const (
	EnvEndpointS3 = "AWS_ENDPOINT_URL_S3" // e.g. http://127.0.0.1:9000 (MinIO), https://storage.googleapis.com (GCS)
	EnvEndpoint   = "AWS_ENDPOINT_URL"    // used when AWS_ENDPOINT_URL_S3 is unset
	EnvRegion     = "AWS_REGION"          // else AWS_DEFAULT_REGION, else asked of the server
	// EnvAddressing chooses how the bucket is addressed: path (http://HOST/BUCKET/KEY, what
	// MinIO, Ceph RGW and most S3-compatible servers want), virtual (http://BUCKET.HOST/KEY) or
	// auto (the default: virtual for AWS and GCS endpoints, path for any other).
	EnvAddressing = "WIREBENCH_S3_ADDRESSING"
)

// S3 is a Store under s3://BUCKET/PREFIX.
type S3 struct {
	loc    Location
	client *minio.Client
}

// OpenS3 connects to the directory at rawURL (s3://BUCKET/PREFIX) with the endpoint, region
// and credentials of the environment (see EnvEndpointS3). It sends nothing: a wrong endpoint or
// credential shows at the first request.
func OpenS3(rawURL string) (*S3, error) {
	loc, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	endpoint, secure, err := s3Endpoint()
	if err != nil {
		return nil, err
	}
	lookup, err := s3Addressing()
	if err != nil {
		return nil, err
	}
	// Whatever prints an error of the client's, the secrets never show (internal/redact).
	redact.Add(os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN"))
	region := os.Getenv(EnvRegion)
	if region == "" {
		region = os.Getenv("AWS_DEFAULT_REGION")
	}
	creds := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.FileAWSCredentials{},
		&credentials.IAM{Client: &http.Client{Transport: http.DefaultTransport}},
	})
	client, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: secure, Region: region, BucketLookup: lookup})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	return &S3{loc: loc, client: client}, nil
}

// s3Endpoint returns the host[:port] of the endpoint and whether it is https.
func s3Endpoint() (string, bool, error) {
	name, raw := EnvEndpointS3, os.Getenv(EnvEndpointS3)
	if raw == "" {
		name, raw = EnvEndpoint, os.Getenv(EnvEndpoint)
	}
	if raw == "" {
		return "s3.amazonaws.com", true, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" {
		return "", false, fmt.Errorf("%s: want a URL such as http://127.0.0.1:9000 (scheme and host, no path)", name)
	}
	return u.Host, u.Scheme == "https", nil
}

func s3Addressing() (minio.BucketLookupType, error) {
	switch v := os.Getenv(EnvAddressing); v {
	case "", "auto":
		return minio.BucketLookupAuto, nil
	case "path":
		return minio.BucketLookupPath, nil
	case "virtual":
		return minio.BucketLookupDNS, nil
	default:
		return 0, fmt.Errorf("%s=%q: want path, virtual or auto", EnvAddressing, v)
	}
}

func (s *S3) String() string { return s.loc.String() }

func (s *S3) wrap(op, name string, err error) error {
	if err == nil {
		return nil
	}
	if r := minio.ToErrorResponse(err); r.Code == minio.NoSuchKey {
		return fmtNotExist(s, name)
	}
	return fmt.Errorf("%s %s/%s: %w", op, s, name, err)
}

func (s *S3) Put(ctx context.Context, name, local string) error {
	_, err := s.client.FPutObject(ctx, s.loc.Bucket, s.loc.key(name), local, minio.PutObjectOptions{ContentType: contentType(name)})
	return s.wrap("upload", name, err)
}

func (s *S3) Get(ctx context.Context, name, local string) error {
	return s.wrap("download", name, s.client.FGetObject(ctx, s.loc.Bucket, s.loc.key(name), local, minio.GetObjectOptions{}))
}

func (s *S3) Create(ctx context.Context, name string, data []byte) error {
	opts := minio.PutObjectOptions{ContentType: contentType(name)}
	opts.SetMatchETagExcept("*") // If-None-Match: *
	_, err := s.client.PutObject(ctx, s.loc.Bucket, s.loc.key(name), bytes.NewReader(data), int64(len(data)), opts)
	if r := minio.ToErrorResponse(err); r.StatusCode == http.StatusPreconditionFailed || r.Code == "PreconditionFailed" {
		return ErrExist
	}
	return s.wrap("create", name, err)
}

func (s *S3) Read(ctx context.Context, name string) ([]byte, error) {
	o, err := s.client.GetObject(ctx, s.loc.Bucket, s.loc.key(name), minio.GetObjectOptions{})
	if err != nil {
		return nil, s.wrap("read", name, err)
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	return b, s.wrap("read", name, err)
}

func (s *S3) List(ctx context.Context) ([]Object, error) {
	prefix := s.loc.key("")
	var objs []Object
	for o := range s.client.ListObjectsIter(ctx, s.loc.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			if r := minio.ToErrorResponse(o.Err); r.Code == minio.NoSuchBucket {
				return nil, fmt.Errorf("list %s: bucket %s: %w", s, s.loc.Bucket, ErrNotExist)
			}
			return nil, fmt.Errorf("list %s: %w", s, o.Err)
		}
		name := strings.TrimPrefix(o.Key, prefix)
		if name == "" || strings.HasSuffix(name, "/") {
			continue // the prefix itself, or a "folder" object some tools make
		}
		objs = append(objs, Object{Name: name, Size: o.Size})
	}
	return objs, nil
}

func (s *S3) Remove(ctx context.Context, name string) error {
	err := s.client.RemoveObject(ctx, s.loc.Bucket, s.loc.key(name), minio.RemoveObjectOptions{})
	if errors.Is(s.wrap("", name, err), ErrNotExist) {
		return nil
	}
	return s.wrap("remove", name, err)
}

// contentType is what a browser or DuckDB sees for name.
func contentType(name string) string {
	switch {
	case strings.HasSuffix(name, ".json"):
		return "application/json"
	case strings.HasSuffix(name, ".html"):
		return "text/html; charset=utf-8"
	case strings.HasSuffix(name, ".md"):
		return "text/markdown; charset=utf-8"
	case strings.HasSuffix(name, ".csv"):
		return "text/csv"
	case strings.HasSuffix(name, ".png"):
		return "image/png"
	case strings.HasSuffix(name, ".svg"):
		return "image/svg+xml"
	}
	return "application/octet-stream"
}
