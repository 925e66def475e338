//! patch (to be written).
