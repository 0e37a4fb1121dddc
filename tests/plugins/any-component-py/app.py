"""A component of its own WIT (wit/units.wit), built with componentize-py and
no toolhost SDK (issue 34): its exported functions become tools."""

from typing import List, Optional

import wit_world
from componentize_py_types import Err
from wit_world.exports.convert import (
    ConversionError,
    LengthUnit,
    Measure,
    Style,
    Temperature,
    Temperature_Celsius,
    Temperature_Fahrenheit,
)

METRES = {
    LengthUnit.MILLIMETRE: 0.001,
    LengthUnit.METRE: 1.0,
    LengthUnit.KILOMETRE: 1000.0,
    LengthUnit.INCH: 0.0254,
    LengthUnit.FOOT: 0.3048,
    LengthUnit.MILE: 1609.344,
}


class Convert(wit_world.exports.Convert):
    def length(self, given: Measure, to: LengthUnit) -> Measure:
        return Measure(value=given.value * METRES[given.unit] / METRES[to], unit=to)

    def to_kelvin(self, temperature: Temperature) -> float:
        if isinstance(temperature, Temperature_Celsius):
            kelvin = temperature.value + 273.15
        elif isinstance(temperature, Temperature_Fahrenheit):
            kelvin = (temperature.value - 32.0) * 5.0 / 9.0 + 273.15
        else:
            kelvin = temperature.value
        if kelvin < 0.0:
            raise Err(ConversionError(code=1, message=f"{kelvin:.2f} K is below absolute zero"))
        return kelvin

    def total(self, a: int, b: int, c: int, d: int) -> int:
        total = a + b + c + d
        if not -(2**31) <= total < 2**31:
            raise Err(f"{total} does not fit an s32")
        return total

    def show(self, n: int, style: Style) -> str:
        if Style.SCIENTIFIC in style:
            text = f"{n:e}"
        elif Style.GROUPED in style:
            text = f"{n:,}"
        else:
            text = str(n)
        if Style.SIGNED in style and n >= 0:
            text = "+" + text
        return text


class WitWorld(wit_world.WitWorld):
    def scale(self, values: List[int], factor: Optional[int]) -> List[int]:
        by = 2 if factor is None else factor
        return [value * by for value in values]

