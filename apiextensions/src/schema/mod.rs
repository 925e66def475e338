//! A CRD version's structural schema (`openAPIV3Schema`, a `JSONSchemaProps` as JSON) applied
//! to a custom resource.
