//! The report's formats: HTML, the SVG plots, and untrusted text escaped
//! in every format.

mod escaping;
mod gfm;
mod html;
mod plot;
mod width;
