//! `storage.k8s.io/v1` VolumeAttachment (kube: `pkg/registry/storage/volumeattachment`).

use k8s_openapi::api::storage::v1::VolumeAttachment;
use serde_json::{Value, json};

use crate::error::Cause;
use crate::kinds::{ResourceDef, Strategy, Subresource};
use crate::table::{Printer, printers};
use crate::validation::storage;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", VolumeAttachments)
        .cluster_scoped()
        .subresources(&[Subresource::Status])
        .schema::<VolumeAttachment>()
}

struct VolumeAttachments;

impl Strategy for VolumeAttachments {
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
