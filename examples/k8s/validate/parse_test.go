// Package validate checks the Kubernetes manifests that `wirebench k8s` writes (and the
// examples in examples/k8s, its output) against the Kubernetes API types. It is a module of its
// own so that k8s.io stays out of wirebench's go.mod; `make test` runs it.
package validate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// objects is one run's manifests, decoded.
type objects struct {
	claims  []*corev1.PersistentVolumeClaim
	configs []*corev1.ConfigMap
	jobs    map[string]*batchv1.Job // by component label
}

// parse splits a multi-document YAML stream and decodes each document into its Kubernetes API
// type, rejecting unknown and duplicate fields, kinds other than the three a run uses, and
// invalid object names and labels.
func parse(name string, data []byte, into *objects) error {
	if into.jobs == nil {
		into.jobs = map[string]*batchv1.Job{}
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		if err := decode(doc, into); err != nil {
			return fmt.Errorf("%s: document %d: %w", name, i, err)
		}
	}
}

func decode(doc []byte, into *objects) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	var meta *metav1.ObjectMeta
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 PersistentVolumeClaim":
		o := &corev1.PersistentVolumeClaim{}
		into.claims, meta = append(into.claims, o), &o.ObjectMeta
		return strict(doc, o, meta)
	case "v1 ConfigMap":
		o := &corev1.ConfigMap{}
		into.configs, meta = append(into.configs, o), &o.ObjectMeta
		return strict(doc, o, meta)
	case "batch/v1 Job":
		o := &batchv1.Job{}
		if err := strict(doc, o, &o.ObjectMeta); err != nil {
			return err
		}
		c := o.Labels["app.kubernetes.io/component"]
		if into.jobs[c] != nil {
			return fmt.Errorf("second Job of component %q", c)
		}
		into.jobs[c] = o
		return nil
	}
	return fmt.Errorf("apiVersion %q kind %q: want v1 PersistentVolumeClaim, v1 ConfigMap or batch/v1 Job", tm.APIVersion, tm.Kind)
}

// strict decodes doc into o with unknown and duplicate fields as errors, then checks its name
// and labels as the API server would.
func strict(doc []byte, o any, meta *metav1.ObjectMeta) error {
	if err := yaml.UnmarshalStrict(doc, o); err != nil {
		return err
	}
	errs := metav1validation.ValidateLabels(meta.Labels, field.NewPath("metadata", "labels"))
	for _, msg := range validation.IsDNS1123Subdomain(meta.Name) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), meta.Name, msg))
	}
	return errs.ToAggregate()
}

// stripComments drops whole-line comments (a document of only comments is empty).
func stripComments(doc []byte) []byte {
	var out []byte
	for line := range bytes.Lines(doc) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
		}
	}
	return out
}

// checkPod checks what the API server checks of a pod template that a decode does not:
// container and volume names, mounts of defined volumes, env names, requests within limits, and
// the Job rules on podFailurePolicy.
func checkPod(j *batchv1.Job) error {
	var errs field.ErrorList
	spec := &j.Spec.Template.Spec
	p := field.NewPath("spec", "template", "spec")
	vols := map[string]bool{}
	for i, v := range spec.Volumes {
		for _, msg := range validation.IsDNS1123Label(v.Name) {
			errs = append(errs, field.Invalid(p.Child("volumes").Index(i).Child("name"), v.Name, msg))
		}
		if vols[v.Name] {
			errs = append(errs, field.Duplicate(p.Child("volumes").Index(i).Child("name"), v.Name))
		}
		vols[v.Name] = true
	}
	names := map[string]bool{}
	for i, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		cp := p.Child("containers").Index(i)
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			errs = append(errs, field.Invalid(cp.Child("name"), c.Name, msg))
		}
		if names[c.Name] {
			errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
		}
		names[c.Name] = true
		if c.Image == "" || len(c.Command) == 0 {
			errs = append(errs, field.Required(cp, "image and command"))
		}
		for k, m := range c.VolumeMounts {
			if !vols[m.Name] {
				errs = append(errs, field.NotFound(cp.Child("volumeMounts").Index(k).Child("name"), m.Name))
			}
		}
		for k, e := range c.Env {
			for _, msg := range validation.IsEnvVarName(e.Name) {
				errs = append(errs, field.Invalid(cp.Child("env").Index(k).Child("name"), e.Name, msg))
			}
		}
		for res, lim := range c.Resources.Limits {
			if req, ok := c.Resources.Requests[res]; ok && req.Cmp(lim) > 0 {
				errs = append(errs, field.Invalid(cp.Child("resources"), req.String(), fmt.Sprintf("%s request above its limit %s", res, lim.String())))
			}
		}
	}
	errs = append(errs, checkFailurePolicy(j, names)...)
	return errs.ToAggregate()
}

// checkFailurePolicy applies the API server's rules on spec.podFailurePolicy.
func checkFailurePolicy(j *batchv1.Job, containers map[string]bool) field.ErrorList {
	pol := j.Spec.PodFailurePolicy
	if pol == nil {
		return nil
	}
	var errs field.ErrorList
	p := field.NewPath("spec", "podFailurePolicy", "rules")
	if j.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		errs = append(errs, field.Invalid(field.NewPath("spec", "template", "spec", "restartPolicy"), j.Spec.Template.Spec.RestartPolicy, "must be Never with a podFailurePolicy"))
	}
	for i, r := range pol.Rules {
		rp := p.Index(i)
		if (r.OnExitCodes == nil) == (len(r.OnPodConditions) == 0) {
			errs = append(errs, field.Invalid(rp, r, "want exactly one of onExitCodes and onPodConditions"))
		}
		if r.Action == batchv1.PodFailurePolicyActionFailIndex && j.Spec.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Invalid(rp.Child("action"), r.Action, "FailIndex needs backoffLimitPerIndex"))
		}
		if e := r.OnExitCodes; e != nil {
			if e.ContainerName != nil && !containers[*e.ContainerName] {
				errs = append(errs, field.NotFound(rp.Child("onExitCodes", "containerName"), *e.ContainerName))
			}
			if len(e.Values) == 0 || !slices.IsSorted(e.Values) || len(slices.Compact(slices.Clone(e.Values))) != len(e.Values) {
				errs = append(errs, field.Invalid(rp.Child("onExitCodes", "values"), e.Values, "want sorted, unique, at least one"))
			}
			if e.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && slices.Contains(e.Values, 0) {
				errs = append(errs, field.Invalid(rp.Child("onExitCodes", "values"), e.Values, "0 is not allowed with In"))
			}
		}
	}
	return errs
}
