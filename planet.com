6.424010658015436e-05 : Mass of the planets (in mstar)
45.53501358863157 : Semi-major axes
0.2626340985625564 : Eccentricities
71.6162956381634 : Inclinaison (deg)
1 : is Inclinaison damping?
1 : planets feel Disk ?
1 : planets feel others ?
0 : Accretion onto planets ?
1.66 : Accretion parameter
0.001 : Maximum mass of the planet
0.4 : Smoothing
1.0 : Region excluded from torque calculation
