//! `convert_units`: length, mass, time, temperature and data size.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::expr::format_number;

/// Converts a value between units of the same dimension: length, mass, time,
/// temperature or data size. Lengths: mm cm m km in ft yd mi nmi (nautical
/// mile). Masses: mg g kg t (tonne) oz lb st (stone). Times: ns us ms s min h d
/// wk yr (365.2425 d). Temperatures: celsius fahrenheit kelvin. Data sizes:
/// bit B kB MB GB TB PB (powers of 1000) and KiB MiB GiB TiB PiB (powers of 1024).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConvertArgs {
    /// The amount to convert.
    pub value: f64,
    /// The unit `value` is in.
    pub from: Unit,
    /// The unit to convert to; it must measure the same dimension as `from`.
    pub to: Unit,
}

/// The result of a conversion.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Converted {
    /// The amount given.
    pub value: f64,
    /// The unit converted from.
    pub from: Unit,
    /// The unit converted to.
    pub to: Unit,
    /// What both units measure.
    pub dimension: Dimension,
    /// The converted amount.
    pub result: f64,
    /// The result rounded to 12 significant digits, with its unit.
    pub formatted: String,
}

/// What a unit measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    /// Distance.
    Length,
    /// Mass (weight).
    Mass,
    /// Duration.
    Time,
    /// Temperature.
    Temperature,
    /// Amount of digital information.
    DataSize,
}

impl fmt::Display for Dimension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dimension::Length => "length",
            Dimension::Mass => "mass",
            Dimension::Time => "time",
            Dimension::Temperature => "temperature",
            Dimension::DataSize => "data size",
        })
    }
}

macro_rules! units {
    ($( $variant:ident = $symbol:literal, $dim:ident, $factor:expr; )*) => {
        /// A unit of measure.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
        pub enum Unit {
            $(
                // No per-variant doc: schemars then emits a plain `enum` of the
                // symbols, which models read more easily than a `oneOf`.
                #[serde(rename = $symbol)]
                $variant,
            )*
        }

        impl Unit {
            /// Every unit, in declaration order.
            pub const ALL: &[Unit] = &[$(Unit::$variant),*];

            /// The unit's symbol, as it appears in the schema.
            pub fn symbol(self) -> &'static str {
                match self { $(Unit::$variant => $symbol),* }
            }

            /// What the unit measures.
            pub fn dimension(self) -> Dimension {
                match self { $(Unit::$variant => Dimension::$dim),* }
            }

            /// How many of the dimension's base unit one of this unit is
            /// (metre, kilogram, second, byte). Unused for temperatures.
            fn factor(self) -> f64 {
                match self { $(Unit::$variant => $factor),* }
            }
        }
    };
}

const YEAR_S: f64 = 365.2425 * 86_400.0;

units! {
    Millimetre = "mm", Length, 1e-3;
    Centimetre = "cm", Length, 1e-2;
    Metre = "m", Length, 1.0;
    Kilometre = "km", Length, 1e3;
    Inch = "in", Length, 0.0254;
    Foot = "ft", Length, 0.3048;
    Yard = "yd", Length, 0.9144;
    Mile = "mi", Length, 1609.344;
    NauticalMile = "nmi", Length, 1852.0;
    Milligram = "mg", Mass, 1e-6;
    Gram = "g", Mass, 1e-3;
    Kilogram = "kg", Mass, 1.0;
    Tonne = "t", Mass, 1e3;
    Ounce = "oz", Mass, 0.028_349_523_125;
    Pound = "lb", Mass, 0.453_592_37;
    Stone = "st", Mass, 6.350_293_18;
    Nanosecond = "ns", Time, 1e-9;
    Microsecond = "us", Time, 1e-6;
    Millisecond = "ms", Time, 1e-3;
    Second = "s", Time, 1.0;
    Minute = "min", Time, 60.0;
    Hour = "h", Time, 3600.0;
    Day = "d", Time, 86_400.0;
    Week = "wk", Time, 604_800.0;
    Year = "yr", Time, YEAR_S;
    Celsius = "celsius", Temperature, 1.0;
    Fahrenheit = "fahrenheit", Temperature, 1.0;
    Kelvin = "kelvin", Temperature, 1.0;
    Bit = "bit", DataSize, 0.125;
    Byte = "B", DataSize, 1.0;
    Kilobyte = "kB", DataSize, 1e3;
    Megabyte = "MB", DataSize, 1e6;
    Gigabyte = "GB", DataSize, 1e9;
    Terabyte = "TB", DataSize, 1e12;
    Petabyte = "PB", DataSize, 1e15;
    Kibibyte = "KiB", DataSize, 1024.0;
    Mebibyte = "MiB", DataSize, 1_048_576.0;
    Gibibyte = "GiB", DataSize, 1_073_741_824.0;
    Tebibyte = "TiB", DataSize, 1_099_511_627_776.0;
    Pebibyte = "PiB", DataSize, 1_125_899_906_842_624.0;
}

/// Why a conversion failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvertError(pub String);

fn units_of(dimension: Dimension) -> String {
    Unit::ALL
        .iter()
        .filter(|u| u.dimension() == dimension)
        .map(|u| u.symbol())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Converts `args.value` from `args.from` to `args.to`.
pub fn convert(args: &ConvertArgs) -> Result<Converted, ConvertError> {
    let (from, to) = (args.from, args.to);
    let dimension = from.dimension();
    if to.dimension() != dimension {
        return Err(ConvertError(format!(
            "cannot convert {} ({}) to {} ({}); {} units are: {}",
            from.symbol(),
            dimension,
            to.symbol(),
            to.dimension(),
            dimension,
            units_of(dimension)
        )));
    }
    let result = if dimension == Dimension::Temperature {
        let kelvin = match from {
            Unit::Celsius => args.value + 273.15,
            Unit::Fahrenheit => (args.value - 32.0) * 5.0 / 9.0 + 273.15,
            _ => args.value,
        };
        if kelvin < 0.0 {
            return Err(ConvertError(format!(
                "{} {} is below absolute zero (0 kelvin = -273.15 celsius = -459.67 fahrenheit)",
                format_number(args.value),
                from.symbol()
            )));
        }
        match to {
            Unit::Celsius => kelvin - 273.15,
            Unit::Fahrenheit => (kelvin - 273.15) * 9.0 / 5.0 + 32.0,
            _ => kelvin,
        }
    } else if from == to {
        args.value
    } else {
        args.value * from.factor() / to.factor()
    };
    if !result.is_finite() {
        return Err(ConvertError(format!(
            "{} {} in {} does not fit in a 64-bit float",
            args.value,
            from.symbol(),
            to.symbol()
        )));
    }
    Ok(Converted {
        value: args.value,
        from,
        to,
        dimension,
        result,
        formatted: format!("{} {}", format_number(result), to.symbol()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(value: f64, from: Unit, to: Unit) -> Result<f64, ConvertError> {
        convert(&ConvertArgs { value, from, to }).map(|c| c.result)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn length_mass_time_data() {
        assert!(close(
            conv(5.0, Unit::Kilometre, Unit::Mile).unwrap(),
            3.106_855_961_185_6
        ));
        assert!(close(conv(1.0, Unit::Foot, Unit::Inch).unwrap(), 12.0));
        assert!(close(conv(1.0, Unit::Mile, Unit::Foot).unwrap(), 5280.0));
        assert!(close(conv(1.0, Unit::Pound, Unit::Ounce).unwrap(), 16.0));
        assert!(close(conv(1.0, Unit::Stone, Unit::Pound).unwrap(), 14.0));
        assert!(close(
            conv(2.5, Unit::Kilogram, Unit::Gram).unwrap(),
            2500.0
        ));
        assert!(close(conv(90.0, Unit::Minute, Unit::Hour).unwrap(), 1.5));
        assert!(close(conv(1.0, Unit::Year, Unit::Day).unwrap(), 365.2425));
        assert!(close(
            conv(1.0, Unit::Gibibyte, Unit::Megabyte).unwrap(),
            1073.741824
        ));
        assert!(close(conv(1.0, Unit::Byte, Unit::Bit).unwrap(), 8.0));
        assert_eq!(conv(7.0, Unit::Metre, Unit::Metre).unwrap(), 7.0);
    }

    #[test]
    fn temperature() {
        assert!(close(
            conv(100.0, Unit::Celsius, Unit::Fahrenheit).unwrap(),
            212.0
        ));
        assert!(close(
            conv(-40.0, Unit::Fahrenheit, Unit::Celsius).unwrap(),
            -40.0
        ));
        assert!(close(
            conv(0.0, Unit::Kelvin, Unit::Celsius).unwrap(),
            -273.15
        ));
        assert!(close(
            conv(98.6, Unit::Fahrenheit, Unit::Kelvin).unwrap(),
            310.15
        ));
        let err = conv(-300.0, Unit::Celsius, Unit::Kelvin).unwrap_err();
        assert!(err.0.contains("below absolute zero"), "{}", err.0);
    }

    #[test]
    fn incompatible_dimensions_list_valid_units() {
        let err = conv(1.0, Unit::Kilometre, Unit::Kilogram).unwrap_err();
        assert_eq!(
            err.0,
            "cannot convert km (length) to kg (mass); length units are: mm, cm, m, km, in, ft, yd, mi, nmi"
        );
    }

    #[test]
    fn units_deserialize_by_symbol_and_output_is_formatted() {
        let args: ConvertArgs =
            serde_json::from_str(r#"{"value": 5, "from": "km", "to": "mi"}"#).unwrap();
        let out = convert(&args).unwrap();
        assert_eq!(out.formatted, "3.10685596119 mi");
        let json = serde_json::to_value(&out).unwrap();
        assert_eq!(json["from"], "km");
        assert_eq!(json["dimension"], "length");
        let err =
            serde_json::from_str::<ConvertArgs>(r#"{"value": 5, "from": "parsec", "to": "m"}"#)
                .unwrap_err();
        assert!(err.to_string().contains("unknown variant"));
    }

    #[test]
    fn every_symbol_is_unique() {
        let mut symbols: Vec<_> = Unit::ALL.iter().map(|u| u.symbol()).collect();
        symbols.sort_unstable();
        symbols.dedup();
        assert_eq!(symbols.len(), Unit::ALL.len());
    }
}
