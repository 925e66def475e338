//! `storage.k8s.io/v1` VolumeAttachment (kube: `pkg/registry/storage/volumeattachment`).

use k8s_openapi::api::storage::v1::VolumeAttachment;
use serde_json::{Value, json};

use crate::printers;
use apimachinery::catalogue::{RESET_FOR_STATUS, ResetFields, ResourceDef, StatusMetadata, Strategy, Subresource};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::storage;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", VolumeAttachments)
        .cluster_scoped()
        .subresources(&[Subresource::Status])
        .schema::<VolumeAttachment>()
}

struct VolumeAttachments;

impl Strategy for VolumeAttachments {
    /// A status writer owns no metadata (kube's reset fields).
    fn reset_fields(&self, subresource: Option<Subresource>) -> Option<ResetFields> {
        (subresource == Some(Subresource::Status)).then_some(&[&["metadata"], &["spec"]])
    }

    /// kube's status strategy resets metadata for status (`ResetObjectMetaForStatus`).
    fn status_metadata(&self) -> StatusMetadata {
        StatusMetadata::Kept(RESET_FOR_STATUS)
    }

    fn validate_kind(&self, obj: &Value) -> Vec<Cause> {
        storage::volume_attachment(obj)
    }

    fn validate_kind_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        storage::volume_attachment_update(new, old)
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(obj, json!({"attached": false}));
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::VOLUME_ATTACHMENTS)
    }
}
